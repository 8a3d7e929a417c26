"""Prometheus recording rules: acceptance per slice and per model, summed across pods first.

Every ratio is numerator rate over denominator rate, each summed over pods and engines before
dividing; never an average of ratios. Names follow `level:metric:operations`.

alpha-hat's bounds are the sidecar's request-level interval (analysis/counting/stats.py), from the
sums over requests the sidecar exports (per slice; per model, each request counted once with its
whole sums): the design effect max(1, robust variance / binomial variance), Student's t on
requests - 1 degrees of freedom (exact in a table up to 20, the Cornish-Fisher polynomial
past it, within 1e-7), then Wilson's bounds on trials / design effect. Where the binomial
variance is 0 (every draft accepted, or none) the design effect is 1, as in the sidecar.

A bound takes a series younger than its window as it is: `increase()` extrapolates a series
that starts inside its range, each counter by its own first value, so a young series' moments
disagree with each other (a design effect of 1 for one that has 11). A counter starts at 0, so
its value is exactly what it counted since it began: `(increase(x[w]) and x offset w) or x`.

The zones' evidence (analysis/verdicts/evidence.py) is recorded per zone window and threshold, with
each shorter window's change from the older rest of every longer one; the deciding window's
evidence (the longest, unless newer data differ) is what SpecDecodeSliceRed / Yellow enter and
leave on.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.canary import canary_rules
from specwatch.gen.goodput_cells import increases
from specwatch.gen.goodput_factors import factor_rules
from specwatch.gen.goodput_rules import goodput_rules
from specwatch.gen.latency_slo import latency_period_rules, latency_slo_rules, load_rules
from specwatch.gen.template import PromQL, Recording, group
from specwatch.gen.zone_rules import deciding_rules, evidence_rules
from specwatch.settings import Settings

# A window's increase, a series younger than the window taken as it is (module docstring).
SUM_INCREASE = PromQL("""
    sum by (${group}) ((increase(${total}[${span}]) and ${total} offset ${span}) or ${total})
""")

TAU = PromQL("""
    1 + ${accepted}
    / ${steps}
""")

SUM_RATE = PromQL("sum by (${group}) (rate(${counter}[${span}]))")

PER_POSITION = PromQL("""
    sum by (${positions}) (rate(${accepted}_total[${span}]))
    / sum by (${positions}) (rate(${drafted}_total[${span}]))
""")

# A 5-minute window is bad when it had enough evidence and alpha-hat was surely below the
# objective (its upper bound).
GOOD_WINDOW = PromQL("""
    1 - (
      (${upper} < bool ${objective})
      * on(${slice})
      (${trials} >= bool ${min_trials})
    )
""")

CAUSE = PromQL("""
    label_replace(topk by (${slice}) (1, ${found}), "cause", "$1", "kind", "(.+)")
    or on(${slice})
    label_replace(${alpha} * 0 + 1, "cause", "none", "", "")
""")


def wilson_expr(p: str, n: str, t: str, bound: str) -> str:
    """The Wilson score bound of proportion series `p` on (effective) trial-count series `n`,
    with the quantile series `t`, kept inside [0, 1] like the sidecar's."""
    return Q.WILSON(p=p, n=n, t=t, sign="-" if bound == "lower" else "+")


def _sum_increase(counter: str, group: str, w: str, windows: Q.Windows) -> str:
    return SUM_INCREASE(group=group, total=f"{counter}_total", span=windows(w))


def _robust_rules(level: str, w: str, windows: Q.Windows, settings: Settings) -> list[Recording]:
    """The design effect, t and the bounds of alpha-hat over window `w` (see the docstring).
    Every operand is recorded `by` the same labels, so plain vector matching pairs them."""
    group_ = Q.by(Q.LEVELS[level])
    rules = [
        Recording(Q.increase(level, name, w), _sum_increase(name, group_, w, windows))
        for name in (C.ACCEPTED_TOKENS, C.ACCEPTANCE_TRIALS, *Q.moments(level))
    ]
    accepted = Q.increase(level, C.ACCEPTED_TOKENS, w)
    trials = Q.increase(level, C.ACCEPTANCE_TRIALS, w)
    n, aa, at, tt = (Q.increase(level, name, w) for name in Q.moments(level))
    p, df = Q.robust_alpha(level, w), Q.degrees_of_freedom(level, w)
    deff, t = Q.design_effect(level, w), Q.t_quantile(level, w)
    effective = Q.effective_trials(level, w)
    rules += [
        Recording(p, Q.RATIO(numerator=accepted, denominator=trials)),
        Recording(df, f"clamp_min({n} - 1, 1)"),
        Recording(deff, Q.DESIGN_EFFECT(n=n, df=df, aa=aa, at=at, tt=tt, p=p, trials=trials)),
        Recording(effective, f"{trials} / {deff}"),
        Recording(t, Q.t_expr(df, settings.zones.confidence)),
    ]
    for bound in ("lower", "upper"):
        rules.append(Recording(Q.alpha_bound(level, bound, w), wilson_expr(p, effective, t, bound)))
    return rules


def _level_rules(
    level: str, labels: tuple[str, ...], windows: Q.Windows, settings: Settings
) -> list[Recording]:
    rules: list[Recording] = []
    by = Q.by(labels)
    counters = (C.ACCEPTED_TOKENS, C.ACCEPTANCE_TRIALS, C.DRAFT_TOKENS, C.SPEC_STEPS)
    zone = Q.zone_windows(_zone_seconds(settings))
    canary = Q.duration(settings.canary.window_seconds)
    for w in sorted({*Q.RATE_WINDOWS, *zone, canary}, key=Q.parse_duration):
        rules += [
            Recording(
                Q.rate(level, name, w), SUM_RATE(group=by, counter=f"{name}_total", span=windows(w))
            )
            for name in counters
        ]
        accepted = Q.rate(level, C.ACCEPTED_TOKENS, w)
        rules += [
            Recording(
                Q.alpha(level, w),
                Q.RATIO(numerator=accepted, denominator=Q.rate(level, C.ACCEPTANCE_TRIALS, w)),
            ),
            Recording(
                Q.vllm_rate(level, w),
                Q.RATIO(numerator=accepted, denominator=Q.rate(level, C.DRAFT_TOKENS, w)),
            ),
            Recording(
                Q.tau(level, w), TAU(accepted=accepted, steps=Q.rate(level, C.SPEC_STEPS, w))
            ),
        ]
        rules += _robust_rules(level, w, windows, settings)
        if w in zone:
            rules += evidence_rules(level, w, settings)
    per_position = PER_POSITION(
        positions=f"{by}, {C.Label.POSITION}",
        accepted=C.ACCEPTED_BY_POSITION,
        drafted=C.DRAFTED_BY_POSITION,
        span=windows("30m"),
    )
    rules.append(Recording(Q.per_position(level, "30m"), per_position))
    if level == "slice":
        rules += deciding_rules(zone, settings)
    return rules


def _zone_seconds(settings: Settings) -> tuple[float, ...]:
    return (settings.window.length_seconds, *settings.evidence_windows_seconds)


def _slo_rules(settings: Settings, windows: Q.Windows) -> list[Recording]:
    """The SLO: `slo_target` of 5-minute windows per slice are good.

    A window is bad when it had enough evidence (`min_window_trials`) and alpha-hat was surely
    below the red threshold (its request-level upper bound); a window without evidence is
    not bad.
    """
    cfg = settings.alerts
    good = GOOD_WINDOW(
        upper=Q.alpha_bound("slice", "upper", "5m"),
        objective=settings.zones.red,
        slice=Q.by(Q.SLICE),
        trials=Q.increase("slice", C.ACCEPTANCE_TRIALS, "5m"),
        min_trials=cfg.min_window_trials,
    )
    rules = [Recording(Q.GOOD_WINDOW, good)]
    for w in Q.SLO_WINDOWS:
        error_ratio = f"1 - avg_over_time({Q.GOOD_WINDOW}[{windows(w)}])"
        rules.append(Recording(Q.slo_error_ratio(w), error_ratio))
    budget = 1.0 - cfg.slo_target
    rules.append(Recording(Q.slo_burn_rate("1h"), f"{Q.slo_error_ratio('1h')} / {budget:.6g}"))
    return rules


def _cause_rule() -> Recording:
    """Each slice's cause as one label for the zone alerts to carry: one of the causes found
    (topk keeps one where a slice has several), `none` where none is; every slice the
    sidecars judge has a series (through the hour's alpha-hat)."""
    slice_ = Q.by(Q.SLICE)
    found = f"max by ({slice_}, {C.Label.KIND}) ({C.CAUSE})"
    return Recording(Q.CAUSE, CAUSE(slice=slice_, found=found, alpha=Q.alpha("slice", "1h")))


def recording_groups(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    rules: list[Recording] = []
    for level, labels in Q.LEVELS.items():
        rules += _level_rules(level, labels, windows, settings)
    rules += canary_rules(settings, windows)
    rules += goodput_rules(settings, windows)
    for part in factor_rules(settings, increases(settings)):  # after TPOT's: they read them
        rules += part
    rules.append(_cause_rule())
    return [
        group("specwatch.recording", rules),
        # A separate group: it reads the acceptance series the group above records.
        group("specwatch.slo", _slo_rules(settings, windows)),
        # latency SLOs: error ratios, then what reads them; the period's over a month, slower
        group(
            "specwatch.latency_slo",
            latency_slo_rules(settings, windows) + load_rules(settings, windows),
        ),
        group(
            "specwatch.latency_slo.period",
            latency_period_rules(settings, windows),
            windows("5m"),
        ),
    ]
