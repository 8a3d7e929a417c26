"""The gain of speculation: measured against a baseline's per-token latency, else modelled.

Modelled (Leviathan et al. 2023, with the measured mean acceptance length tau in place of the
i.i.d. formula): gain = tau / (1 + K c), c = draft step cost / target step cost. Measured: the
baseline's time per output token over speculation's. Always labelled with its method.
"""

from __future__ import annotations

from dataclasses import dataclass

MEASURED = "measured"
MODELLED = "modelled"


@dataclass(frozen=True, slots=True)
class Gain:
    ratio: float
    method: str


def modelled_gain(tau: float, k: int, cost_ratio: float) -> float:
    return tau / (1.0 + k * cost_ratio)


def measured_gain(baseline_tpot: float, spec_tpot: float) -> float:
    return baseline_tpot / spec_tpot


def gain_of(
    tau: float | None,
    k: int,
    cost_ratio: float,
    baseline_tpot: float | None = None,
    spec_tpot: float | None = None,
) -> Gain | None:
    """Measured when both latencies are known, else modelled when tau is; else None."""
    if baseline_tpot and spec_tpot:
        return Gain(measured_gain(baseline_tpot, spec_tpot), MEASURED)
    if tau is None or k <= 0:
        return None
    return Gain(modelled_gain(tau, k, cost_ratio), MODELLED)
