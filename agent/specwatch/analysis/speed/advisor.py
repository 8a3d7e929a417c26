"""[compiled] The draft-length advisor: which K pays best, from measured per-position acceptance.

Expected tokens per step at K' <= K is E(K') = 1 + sum_{i <= K'} p_i, with p_i the measured
share of steps that accepted position i: no independence assumed. The predicted speedup is
E(K') / (1 + K' c) (Leviathan et al. 2023, c = draft step cost / target step cost); K' = 0 is
no speculation (speedup 1). The optimum is flat, so the advice is a range: every K' within 2%
of the best. When the best is the K in use, the data cannot tell whether a longer draft pays:
try K + 1 on a canary. Positions past `limits.max_position` are not counted: a K past it is
weighed against the shorter drafts only, and the note says so instead of advising a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specwatch.analysis.counting.counts import Counts
    from specwatch.analysis.counting.stats import SliceStats

RANGE_TOLERANCE = 0.02


@dataclass(frozen=True, slots=True)
class Advice:
    current_k: int
    best_k: int
    best_speedup: float
    range: tuple[int, int]
    table: tuple[tuple[int, float, float], ...]  # (K', expected tokens per step, speedup)
    note: str


def advise(per_position: tuple[float, ...], current_k: int, cost_ratio: float) -> Advice | None:
    """Advice for one model or slice, or None without per-position data."""
    if not per_position or current_k <= 0:
        return None
    rows = [(0, 1.0, 1.0)]
    expected = 1.0
    for k, p in enumerate(per_position[:current_k], start=1):
        expected += p
        rows.append((k, expected, expected / (1.0 + k * cost_ratio)))
    best_k, _, best = max(rows, key=lambda row: (row[2], -row[0]))
    near = [k for k, _, speedup in rows if speedup >= best * (1.0 - RANGE_TOLERANCE)]
    counted = len(per_position)
    if counted < current_k:  # positions past limits.max_position are not counted
        note = (
            f"K={current_k} drafts past the {counted} positions counted: K={best_k} is the "
            f"best of K=0-{counted}; raise limits.max_position to weigh K={current_k}"
        )
    elif best_k == 0:
        note = "speculation does not pay at this acceptance: turn it off, or find a better draft"
    elif best_k < current_k:
        note = f"lower num_speculative_tokens from {current_k} to {best_k}"
    else:
        note = f"K={current_k} is the best measured: try K={current_k + 1} on a canary"
    return Advice(
        current_k=current_k,
        best_k=best_k,
        best_speedup=best,
        range=(min(near), max(near)),
        table=tuple(rows),
        note=note,
    )


def advice_for(counts: Counts, stats: SliceStats, cost_ratio: float) -> Advice | None:
    """The advice for a slice's (or a load cell's) counts and their statistics."""
    return advise(stats.per_position, counts.max_drafted, cost_ratio)
