"""The zones' evidence in PromQL (analysis/verdicts/evidence.py): per zone window and threshold its
log-likelihood ratio, each shorter window's change from the older rest of a longer one, and the
deciding window's evidence at the entry and exit bars, which SpecDecodeSliceRed / Yellow enter
and leave on. tests/artifacts/test_rules.py holds each figure to the sidecar's."""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.analysis.counting.stats import tail_confidence
from specwatch.gen import promql as Q
from specwatch.gen.template import PromQL, Recording
from specwatch.settings import Settings

# Window `w`'s gate: 1 past the whole gates, 0.5 past half of them, absent below.
GATE = PromQL("""
    ${whole} * 0 + 1
    or ${half} * 0 + 0.5
""")

# (d0^2 - d1^2) / (2 v) of alpha-hat `p` against the indifference zone [low, high]
EVIDENCE = PromQL("""
    (clamp_min(${p} - ${low}, 0) ^ 2 - clamp_min(${high} - ${p}, 0) ^ 2)
    / (2 * ${variance})
    and ${on} ${gate}
""")

# the older rest of a longer window: its sums less the shorter window's
DIFFERENCE = PromQL("""
    ${minuend}
    - ${subtrahend}
""")

# the shorter window's squared distance from the older rest, on their pooled variance
CHANGE = PromQL("""
    (${short_p} - ${on} ${p}) ^ 2
    / (
      2 * ${pooled} * (1 - ${pooled})
      * (${short_part} + ${on} ${deff} * ${widening} / ${t})
    )
    and ${on} ${n} >= 2 and ${on} ${short_n} >= 2
    and ${on} (${pooled} * (1 - ${pooled}) > 0)
""")


def evidence_rules(level: str, w: str, settings: Settings) -> list[Recording]:
    """Window `w`'s sample gate, widening and evidence per threshold
    (analysis/verdicts/evidence.py):
    (d0^2 - d1^2) / (2 v), v = design effect x widening x c (1 - c) / trials, where the
    widening is (t / z)^2 at the tail of the verdict's bar. Recorded only where the window
    passes half the gates (what keeps a verdict; the entry needs them whole: `gate` 1)."""
    cfg = settings.zones
    group = Q.by(Q.LEVELS[level])
    on = f"on({group})"
    trials = Q.increase(level, C.ACCEPTANCE_TRIALS, w)
    n = Q.increase(level, Q.moments(level)[0], w)
    p, gate = Q.robust_alpha(level, w), Q.evidence_gate(level, w)
    widening, df = Q.evidence_widening(level, w), Q.degrees_of_freedom(level, w)

    def passes(scale: float) -> str:
        return (
            f"({trials} >= {cfg.min_trials * scale:g} and {on} {n} >= {cfg.min_requests * scale:g})"
        )

    rules = [Recording(gate, GATE(whole=passes(1), half=passes(0.5)))]
    for name in ("green", "red"):
        bar = cfg.bar(name)
        t = Q.t_expr(df, tail_confidence(bar))
        labels = {C.Label.THRESHOLD.value: name}
        rules.append(Recording(widening, Q.WIDENING(t=t, twice_bar=f"{2 * bar:g}"), labels))
    thresholds = [("green", "green", cfg.green), ("red", "red", cfg.red)]
    if level == "slice":  # the exit thresholds, which SpecDecodeSliceRed / Yellow leave on
        thresholds += [
            ("green_exit", "green", cfg.green - cfg.exit_margin),
            ("red_exit", "red", cfg.red + cfg.exit_margin),
        ]
    for label, of, c in thresholds:
        low, high, spread = c - cfg.indifference, c + cfg.indifference, c * (1 - c)
        widened = f'{widening}{{{C.Label.THRESHOLD}="{of}"}}'
        variance = f"{Q.design_effect(level, w)} * {on} {widened} * {spread:.10g} / {trials}"
        evidence = EVIDENCE(
            p=p, low=f"{low:.10g}", high=f"{high:.10g}", variance=variance, on=on, gate=gate
        )
        rules.append(Recording(Q.evidence(level, w), evidence, {C.Label.THRESHOLD.value: label}))
    return rules


_MOMENTS = ("requests", "accepted", "trials", "aa", "at", "tt")


def _change_rules(shorter: str, longer: str, settings: Settings) -> list[Recording]:
    """The change ratio of window `shorter` against the older rest of `longer` (analysis/
    evidence.change_ratio): the rest's sums are the longer window's less the shorter's; the
    pooled alpha of the two stretches is the longer window's own."""
    cb = settings.zones.change_evidence
    on = f"on({Q.by(Q.SLICE)})"
    counters = (C.SLICE_REQUESTS, C.ACCEPTED_TOKENS, C.ACCEPTANCE_TRIALS, *Q.moments("slice")[1:])
    rest = {part: Q.zone_rest(part, shorter, longer) for part in _MOMENTS}
    rules = [
        Recording(
            rest[part],
            f"{Q.increase('slice', name, longer)}\n- {Q.increase('slice', name, shorter)}",
        )
        for part, name in zip(_MOMENTS, counters, strict=True)
    ]
    n, a, t, aa, at, tt = (rest[part] for part in _MOMENTS)
    p, deff = Q.zone_rest("alpha", shorter, longer), Q.zone_rest("deff", shorter, longer)
    widening = Q.zone_rest("widening", shorter, longer)
    pooled = Q.robust_alpha("slice", longer)
    short_p, short_t = (
        Q.robust_alpha("slice", shorter),
        Q.increase("slice", C.ACCEPTANCE_TRIALS, shorter),
    )
    short_n = Q.increase("slice", C.SLICE_REQUESTS, shorter)
    short_part = (
        f"{Q.design_effect('slice', shorter)} * {Q.zone_change_widening(shorter)} / {short_t}"
    )
    rest_t = Q.t_expr(f"clamp_min({n} - 1, 1)", tail_confidence(cb))
    df = f"clamp_min({n} - 1, 1)"
    rules += [
        Recording(p, Q.RATIO(numerator=a, denominator=f"({t} > 0)")),
        Recording(deff, Q.DESIGN_EFFECT(n=n, df=df, aa=aa, at=at, tt=tt, p=p, trials=t)),
        Recording(widening, Q.WIDENING(t=rest_t, twice_bar=f"{2 * cb:g}")),
        Recording(
            Q.zone_change(shorter, longer),
            CHANGE(
                short_p=short_p,
                on=on,
                p=p,
                pooled=pooled,
                short_part=short_part,
                deff=deff,
                widening=widening,
                t=t,
                n=n,
                short_n=short_n,
            ),
        ),
    ]
    return rules


def _change_widening(w: str, settings: Settings) -> Recording:
    cb = settings.zones.change_evidence
    t = Q.t_expr(Q.degrees_of_freedom("slice", w), tail_confidence(cb))
    return Recording(Q.zone_change_widening(w), Q.WIDENING(t=t, twice_bar=f"{2 * cb:g}"))


def _deciding_paths(
    windows: tuple[str, ...], entry: bool
) -> list[tuple[str, list[str], list[str]]]:
    """Every way `Evidence.deciding` can go over `windows` (shortest first), as (the deciding
    window, the switches taken, the switches not taken): from the longest down, each shorter
    window decides instead where its change from the rest of the deciding one reaches the change
    bar (and it is past the gates the verdict needs)."""
    on = f"on({Q.by(Q.SLICE)})"
    gate = "== 1" if entry else ">= 0.5"

    def switch(shorter: str, longer: str) -> str:
        return (
            f"({Q.zone_change(shorter, longer)} >= {{cb}} "
            f"and {on} {Q.evidence_gate('slice', shorter)} {gate})"
        )

    paths: list[tuple[str, list[str], list[str]]] = [(windows[-1], [], [])]
    for shorter in reversed(windows[:-1]):
        grown: list[tuple[str, list[str], list[str]]] = []
        for chosen, taken, not_taken in paths:
            grown.append((shorter, [*taken, switch(shorter, chosen)], not_taken))
            grown.append((chosen, taken, [*not_taken, switch(shorter, chosen)]))
        paths = grown
    return paths


def _decided(
    windows: tuple[str, ...], threshold: str, bar: float, entry: bool, change_bar: float
) -> str:
    """The deciding window's evidence about `threshold` where it is sure at `bar` (and past
    the whole gates when `entry`), one `or` alternative per way the deciding window can be
    chosen (`_deciding_paths`: they exclude each other)."""
    on = f"on({Q.by(Q.SLICE)})"
    parts = []
    for chosen, taken, not_taken in _deciding_paths(windows, entry):
        value = f'{Q.evidence("slice", chosen)}{{{C.Label.THRESHOLD}="{threshold}"}}'
        expr = f"{value} and {on} abs({value}) >= {bar:g}"
        if entry:
            expr += f" and {on} {Q.evidence_gate('slice', chosen)} == 1"
        for condition in taken:
            expr += f"\n   and {on} {condition.format(cb=f'{change_bar:g}')}"
        for condition in not_taken:
            expr += f"\n   unless {on} {condition.format(cb=f'{change_bar:g}')}"
        parts.append(f"  ({expr})")
    return f"\nor {on}\n".join(parts)


def deciding_rules(zone: tuple[str, ...], settings: Settings) -> list[Recording]:
    """Per slice: each zone window's widening at the change bar, every shorter window's change
    from the older rest of each longer one, and the deciding evidence per threshold at its
    entry and exit bars (what SpecDecodeSliceRed / Yellow read)."""
    cfg = settings.zones
    rules = [_change_widening(w, settings) for w in zone]
    for i, shorter in enumerate(zone):
        for longer in zone[i + 1 :]:
            rules += _change_rules(shorter, longer, settings)
    for threshold in ("green", "red"):
        for record, series, bar, entry in (
            (Q.EVIDENCE_ENTRY, threshold, cfg.bar(threshold), True),
            (Q.EVIDENCE_EXIT, f"{threshold}_exit", cfg.exit_bar(threshold), False),
        ):
            # (an exit threshold's evidence is stored under its threshold's name: the rule's
            # labels overwrite the series' own)
            expr = _decided(zone, series, bar, entry, cfg.change_evidence)
            rules.append(Recording(record, expr, {C.Label.THRESHOLD.value: threshold}))
    return rules
