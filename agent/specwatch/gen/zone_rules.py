"""The zones' evidence in PromQL (analysis/verdicts/evidence.py): per zone window and threshold its
log-likelihood ratio, each shorter window's change from the older rest of a longer one, and the
deciding window's evidence at the entry and exit bars, which SpecDecodeSliceRed / Yellow enter
and leave on. tests/artifacts/test_rules.py holds each figure to the sidecar's."""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.analysis.counting.stats import tail_confidence
from specwatch.gen import promql as Q
from specwatch.settings import Settings


def evidence_rules(level: str, w: str, settings: Settings) -> list[dict[str, Any]]:
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

    rules: list[dict[str, Any]] = [
        {"record": gate, "expr": f"{passes(1)} * 0 + 1\nor {passes(0.5)} * 0 + 0.5"},
    ]
    for name in ("green", "red"):
        bar = cfg.bar(name)
        rules.append(
            {
                "record": widening,
                "labels": {C.Label.THRESHOLD: name},
                "expr": f"(\n{Q.t_expr(df, tail_confidence(bar))}\n) ^ 2 / {2 * bar:g}",
            }
        )
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
        rules.append(
            {
                "record": Q.evidence(level, w),
                "labels": {C.Label.THRESHOLD: label},
                "expr": (
                    f"(clamp_min({p} - {low:.10g}, 0) ^ 2 - clamp_min({high:.10g} - {p}, 0) ^ 2)\n"
                    f"/ (2 * {variance})\nand {on} {gate}"
                ),
            }
        )
    return rules


_MOMENTS = ("requests", "accepted", "trials", "aa", "at", "tt")


def _change_rules(shorter: str, longer: str, settings: Settings) -> list[dict[str, Any]]:
    """The change ratio of window `shorter` against the older rest of `longer` (analysis/
    evidence.change_ratio): the rest's sums are the longer window's less the shorter's; the
    pooled alpha of the two stretches is the longer window's own."""
    cb = settings.zones.change_evidence
    on = f"on({Q.by(Q.SLICE)})"
    counters = (C.SLICE_REQUESTS, C.ACCEPTED_TOKENS, C.ACCEPTANCE_TRIALS, *Q.moments("slice")[1:])
    rest = {part: Q.zone_rest(part, shorter, longer) for part in _MOMENTS}
    rules: list[dict[str, Any]] = [
        {
            "record": rest[part],
            "expr": f"{Q.increase('slice', name, longer)}\n- {Q.increase('slice', name, shorter)}",
        }
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
    rules += [
        {"record": p, "expr": f"{a}\n/ ({t} > 0)"},
        {
            "record": deff,
            "expr": (
                f"clamp_min(\n  {n} / clamp_min({n} - 1, 1)\n"
                f"  * ({aa} - 2 * {p} * {at} + {p} ^ 2 * {tt})\n"
                f"  / {t} ^ 2\n"
                f"  / ({p} * (1 - {p}) / {t} > 0),\n  1\n)\n"
                f"or ({p} * 0 + 1)"
            ),
        },
        {
            "record": widening,
            "expr": f"(\n{rest_t}\n) ^ 2 / {2 * cb:g}",
        },
        {
            "record": Q.zone_change(shorter, longer),
            "expr": (
                f"({short_p} - {on} {p}) ^ 2\n"
                f"/ (\n  2 * {pooled} * (1 - {pooled})\n"
                f"  * ({short_part} + {on} {deff} * {widening} / {t})\n)\n"
                f"and {on} {n} >= 2 and {on} {short_n} >= 2\n"
                f"and {on} ({pooled} * (1 - {pooled}) > 0)"
            ),
        },
    ]
    return rules


def _change_widening(w: str, settings: Settings) -> dict[str, Any]:
    cb = settings.zones.change_evidence
    df = Q.degrees_of_freedom("slice", w)
    return {
        "record": Q.zone_change_widening(w),
        "expr": f"(\n{Q.t_expr(df, tail_confidence(cb))}\n) ^ 2 / {2 * cb:g}",
    }


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


def deciding_rules(zone: tuple[str, ...], settings: Settings) -> list[dict[str, Any]]:
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
            rules.append({"record": record, "labels": {C.Label.THRESHOLD: threshold}, "expr": expr})
    return rules
