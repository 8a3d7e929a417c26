"""Prometheus recording rules: acceptance per slice and per model, summed across pods first.

Every ratio is numerator rate over denominator rate, each summed over pods and engines before
dividing; never an average of ratios. Names follow `level:metric:operations`.

alpha-hat's bounds are the sidecar's request-level interval (analysis/stats.py), from the
per-slice sums over requests the sidecar exports: the design effect
max(1, robust variance / binomial variance), Student's t on requests - 1 degrees of freedom
(the same Cornish-Fisher polynomial as the sidecar), then Wilson's bounds on
trials / design effect. Where the binomial variance is 0 (every draft accepted, or none) the
design effect is 1, as in the sidecar.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.analysis.stats import t_coefficients
from specwatch.gen import promql as Q
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


def _robust_rules(level: str, w: str, confidence: float) -> list[dict[str, Any]]:
    """The design effect, t and the bounds of alpha-hat over window `w` (see the docstring).
    Every operand is recorded `by` the same labels, so plain vector matching pairs them."""
    p = Q.alpha(level, w)
    trials = Q.increase(level, C.ACCEPTANCE_TRIALS, w)
    n = Q.increase(level, C.SLICE_REQUESTS, w)
    aa = Q.increase(level, C.REQUEST_ACCEPTED_SQUARED, w)
    at = Q.increase(level, C.REQUEST_ACCEPTED_X_TRIALS, w)
    tt = Q.increase(level, C.REQUEST_TRIALS_SQUARED, w)
    c0, c1, c2, c3 = t_coefficients(confidence)
    df = f"clamp_min({n} - 1, 1)"
    deff, t = Q.design_effect(level, w), Q.t_quantile(level, w)
    rules: list[dict[str, Any]] = [
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
        {
            "record": t,
            "expr": f"{c0:.9g} + {c1:.9g} / {df} + {c2:.9g} / {df} ^ 2 + {c3:.9g} / {df} ^ 3",
        },
    ]
    for bound in ("lower", "upper"):
        expr = wilson_expr(p, Q.effective_trials(level, w), t, bound)
        rules.append({"record": Q.alpha_bound(level, bound, w), "expr": expr})
    return rules


def _level_rules(
    level: str, labels: tuple[str, ...], windows: Q.Windows, confidence: float
) -> list[Any]:
    rules: list[dict[str, Any]] = []
    group = Q.by(labels)
    counters = {
        C.ACCEPTED_TOKENS: C.ACCEPTED_TOKENS + "_total",
        C.ACCEPTANCE_TRIALS: C.ACCEPTANCE_TRIALS + "_total",
        C.DRAFT_TOKENS: C.DRAFT_TOKENS + "_total",
        C.SPEC_STEPS: C.SPEC_STEPS + "_total",
    }
    for w in Q.RATE_WINDOWS:
        for name, counter in counters.items():
            rules.append(
                {
                    "record": Q.rate(level, name, w),
                    "expr": f"sum by ({group}) (rate({counter}[{windows(w)}]))",
                }
            )
        for name in (
            C.ACCEPTANCE_TRIALS,
            C.SLICE_REQUESTS,
            C.REQUEST_ACCEPTED_SQUARED,
            C.REQUEST_ACCEPTED_X_TRIALS,
            C.REQUEST_TRIALS_SQUARED,
        ):
            rules.append(
                {
                    "record": Q.increase(level, name, w),
                    "expr": f"sum by ({group}) (increase({name}_total[{windows(w)}]))",
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
        rules += _robust_rules(level, w, confidence)
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
    return rules


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


def recording_groups(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    rules: list[Any] = []
    for level, labels in Q.LEVELS.items():
        rules += _level_rules(level, labels, windows, settings.zones.confidence)
    return [
        {"name": "specwatch.recording", "rules": rules},
        # A separate group: it reads the acceptance series the group above records.
        {"name": "specwatch.slo", "rules": _slo_rules(settings, windows)},
    ]
