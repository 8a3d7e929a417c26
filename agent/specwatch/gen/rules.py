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
from specwatch.gen.goodput_factors import factor_rules
from specwatch.gen.goodput_rules import goodput_rules, increases
from specwatch.gen.zone_rules import deciding_rules, evidence_rules
from specwatch.settings import Settings


def wilson_expr(p: str, n: str, t: str, bound: str) -> str:
    """The Wilson score bound of proportion series `p` on (effective) trial-count series `n`,
    with the quantile series `t`, kept inside [0, 1] like the sidecar's."""
    sign = "-" if bound == "lower" else "+"
    return (
        f"clamp(\n  (\n    {p} + {t} ^ 2 / (2 * {n})\n"
        f"    {sign} {t} * sqrt({p} * (1 - {p}) / {n} + {t} ^ 2 / (4 * {n} ^ 2))\n"
        f"  )\n  / (1 + {t} ^ 2 / {n}),\n  0, 1\n)"
    )


def _sum_increase(counter: str, group: str, w: str, windows: Q.Windows) -> str:
    """The window's increase, a series younger than the window taken as it is (module
    docstring)."""
    total, span = f"{counter}_total", windows(w)
    return f"sum by ({group}) ((increase({total}[{span}]) and {total} offset {span}) or {total})"


def _robust_rules(
    level: str, w: str, windows: Q.Windows, settings: Settings
) -> list[dict[str, Any]]:
    """The design effect, t and the bounds of alpha-hat over window `w` (see the docstring).
    Every operand is recorded `by` the same labels, so plain vector matching pairs them."""
    group = Q.by(Q.LEVELS[level])
    rules: list[dict[str, Any]] = [
        {"record": Q.increase(level, name, w), "expr": _sum_increase(name, group, w, windows)}
        for name in (C.ACCEPTED_TOKENS, C.ACCEPTANCE_TRIALS, *Q.moments(level))
    ]
    accepted = Q.increase(level, C.ACCEPTED_TOKENS, w)
    trials = Q.increase(level, C.ACCEPTANCE_TRIALS, w)
    n, aa, at, tt = (Q.increase(level, name, w) for name in Q.moments(level))
    p, df = Q.robust_alpha(level, w), Q.degrees_of_freedom(level, w)
    deff, t = Q.design_effect(level, w), Q.t_quantile(level, w)
    confidence = settings.zones.confidence
    rules += [
        {"record": p, "expr": f"{accepted}\n/ {trials}"},
        {"record": df, "expr": f"clamp_min({n} - 1, 1)"},
        {
            "record": deff,
            "expr": (
                f"clamp_min(\n  {n} / {df}\n"
                f"  * ({aa} - 2 * {p} * {at} + {p} ^ 2 * {tt})\n"
                f"  / {trials} ^ 2\n"
                f"  / ({p} * (1 - {p}) / {trials} > 0),\n  1\n)\n"
                f"or ({p} * 0 + 1)"
            ),
        },
        {"record": Q.effective_trials(level, w), "expr": f"{trials} / {deff}"},
        {"record": t, "expr": Q.t_expr(df, confidence)},
    ]
    for bound in ("lower", "upper"):
        expr = wilson_expr(p, Q.effective_trials(level, w), t, bound)
        rules.append({"record": Q.alpha_bound(level, bound, w), "expr": expr})
    return rules


def _level_rules(
    level: str, labels: tuple[str, ...], windows: Q.Windows, settings: Settings
) -> list[Any]:
    rules: list[dict[str, Any]] = []
    group = Q.by(labels)
    counters = {
        C.ACCEPTED_TOKENS: C.ACCEPTED_TOKENS + "_total",
        C.ACCEPTANCE_TRIALS: C.ACCEPTANCE_TRIALS + "_total",
        C.DRAFT_TOKENS: C.DRAFT_TOKENS + "_total",
        C.SPEC_STEPS: C.SPEC_STEPS + "_total",
    }
    zone = Q.zone_windows(_zone_seconds(settings))
    canary = Q.duration(settings.canary.window_seconds)
    for w in sorted({*Q.RATE_WINDOWS, *zone, canary}, key=Q.parse_duration):
        for name, counter in counters.items():
            rules.append(
                {
                    "record": Q.rate(level, name, w),
                    "expr": f"sum by ({group}) (rate({counter}[{windows(w)}]))",
                }
            )
        accepted = Q.rate(level, C.ACCEPTED_TOKENS, w)
        rules += [
            {
                "record": Q.alpha(level, w),
                "expr": f"{accepted}\n/ {Q.rate(level, C.ACCEPTANCE_TRIALS, w)}",
            },
            {
                "record": Q.vllm_rate(level, w),
                "expr": f"{accepted}\n/ {Q.rate(level, C.DRAFT_TOKENS, w)}",
            },
            {
                "record": Q.tau(level, w),
                "expr": f"1 + {accepted}\n/ {Q.rate(level, C.SPEC_STEPS, w)}",
            },
        ]
        rules += _robust_rules(level, w, windows, settings)
        if w in zone:
            rules += evidence_rules(level, w, settings)
    positions = f"{group}, {C.Label.POSITION}"
    rules.append(
        {
            "record": Q.per_position(level, "30m"),
            "expr": (
                f"sum by ({positions}) (rate({C.ACCEPTED_BY_POSITION}_total[{windows('30m')}]))\n"
                f"/ sum by ({positions}) (rate({C.DRAFTED_BY_POSITION}_total[{windows('30m')}]))"
            ),
        }
    )
    if level == "slice":
        rules += deciding_rules(zone, settings)
    return rules


def _zone_seconds(settings: Settings) -> tuple[float, ...]:
    return (settings.window.length_seconds, *settings.evidence_windows_seconds)


def _slo_rules(settings: Settings, windows: Q.Windows) -> list[Any]:
    """The SLO: `slo_target` of 5-minute windows per slice are good.

    A window is bad when it had enough evidence (`min_window_trials`) and alpha-hat was surely
    below the red threshold (its request-level upper bound); a window without evidence is
    not bad.
    """
    cfg = settings.alerts
    objective = settings.zones.red
    on = f"on({Q.by(Q.SLICE)})"
    trials = Q.increase("slice", C.ACCEPTANCE_TRIALS, "5m")
    rules: list[dict[str, Any]] = [
        {
            "record": Q.GOOD_WINDOW,
            "expr": (
                f"1 - (\n  ({Q.alpha_bound('slice', 'upper', '5m')} < bool {objective})\n"
                f"  * {on}\n"
                f"  ({trials} >= bool {cfg.min_window_trials})\n)"
            ),
        }
    ]
    for w in Q.SLO_WINDOWS:
        rules.append(
            {
                "record": Q.slo_error_ratio(w),
                "expr": f"1 - avg_over_time({Q.GOOD_WINDOW}[{windows(w)}])",
            }
        )
    budget = 1.0 - cfg.slo_target
    rules.append(
        {
            "record": Q.slo_burn_rate("1h"),
            "expr": f"{Q.slo_error_ratio('1h')} / {budget:.6g}",
        }
    )
    return rules


def _cause_rule() -> dict[str, Any]:
    """Each slice's cause as one label for the zone alerts to carry: one of the causes found
    (topk keeps one where a slice has several), `none` where none is; every slice the
    sidecars judge has a series (through the hour's alpha-hat)."""
    slice_ = Q.by(Q.SLICE)
    found = f"max by ({slice_}, {C.Label.KIND}) ({C.CAUSE})"
    return {
        "record": Q.CAUSE,
        "expr": (
            f'label_replace(topk by ({slice_}) (1, {found}), "cause", "$1", "kind", "(.+)")\n'
            f"or on({slice_})\n"
            f'label_replace({Q.alpha("slice", "1h")} * 0 + 1, "cause", "none", "", "")'
        ),
    }


def recording_groups(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    rules: list[Any] = []
    for level, labels in Q.LEVELS.items():
        rules += _level_rules(level, labels, windows, settings)
    rules += canary_rules(settings, windows)
    rules += goodput_rules(settings, windows)
    for part in factor_rules(settings, increases(settings)):  # after TPOT's: they read them
        rules += part
    rules.append(_cause_rule())
    return [
        {"name": "specwatch.recording", "rules": rules},
        # A separate group: it reads the acceptance series the group above records.
        {"name": "specwatch.slo", "rules": _slo_rules(settings, windows)},
    ]
