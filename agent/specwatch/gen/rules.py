"""Prometheus recording rules: acceptance per slice and per model, summed across pods first.

Every ratio is numerator rate over denominator rate, each summed over pods and engines before
dividing; never an average of ratios. Names follow `level:metric:operations`.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.settings import Settings


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_expr(p: str, n: str, z: float, bound: str) -> str:
    """The Wilson score bound of proportion series `p` on trial-count series `n`."""
    z2 = z * z
    sign = "-" if bound == "lower" else "+"
    return (
        f"(\n  {p} + {z2 / 2:.6g} / {n}\n"
        f"  {sign} {z:.6g} * sqrt({p} * (1 - {p}) / {n} + {z2 / 4:.6g} / ({n} ^ 2))\n"
        f")\n/ (1 + {z2:.6g} / {n})"
    )


def _level_rules(level: str, labels: tuple[str, ...], windows: Q.Windows, z: float) -> list[Any]:
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
        rules.append(
            {
                "record": Q.increase(level, C.ACCEPTANCE_TRIALS, w),
                "expr": (
                    f"sum by ({group}) (increase({counters[C.ACCEPTANCE_TRIALS]}[{windows(w)}]))"
                ),
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
        n = Q.increase(level, C.ACCEPTANCE_TRIALS, w)
        for bound in ("lower", "upper"):
            rules.append(
                {
                    "record": Q.alpha_bound(level, bound, w),
                    "expr": wilson_expr(Q.alpha(level, w), n, z, bound),
                }
            )
    positions = f"{group}, {C.LABEL_POSITION}"
    rules.append(
        {
            "record": Q.per_position(level, "30m"),
            "expr": (
                f"sum by ({positions}) (rate({C.ACCEPTED_BY_POSITION}_total[{windows('30m')}]))\n"
                f"/ ignoring({C.LABEL_POSITION}) group_left\n"
                f"{Q.rate(level, C.SPEC_STEPS, '30m')}"
            ),
        }
    )
    return rules


def _slo_rules(settings: Settings, windows: Q.Windows) -> list[Any]:
    """The SLO: `slo_target` of 5-minute windows per slice are good.

    A window is bad when it had enough evidence (`min_window_trials`) and its alpha-hat was
    below the red threshold; a window without evidence is not bad.
    """
    cfg = settings.alerts
    objective = settings.zones.red
    on = f"on({Q.by(Q.SLICE)})"
    trials = Q.increase("slice", C.ACCEPTANCE_TRIALS, "5m")
    rules: list[dict[str, Any]] = [
        {
            "record": Q.GOOD_WINDOW,
            "expr": (
                f"1 - (\n  ({Q.alpha('slice', '5m')} < bool {objective})\n"
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
    z = _z(settings.zones.confidence)
    rules: list[Any] = []
    for level, labels in Q.LEVELS.items():
        rules += _level_rules(level, labels, windows, z)
    return [
        {"name": "specwatch.recording", "rules": rules},
        # A separate group: it reads the acceptance series the group above records.
        {"name": "specwatch.slo", "rules": _slo_rules(settings, windows)},
    ]
