"""The speedup surface K x concurrency and the table it recommends (bench/concurrency.py)."""

from __future__ import annotations

from typing import Any

import pytest
from specwatch.bench.concurrency import parse_levels, recommend, surface
from specwatch.bench.sweep import SweepError


def figure(estimate: float, low: float | None = None, high: float | None = None) -> Any:
    return {"estimate": estimate, "low": low, "high": high, "pairs": 40}


def verdict(*targets: tuple[str, int, float]) -> dict[str, Any]:
    return {
        "targets": [
            {"target": name, "k": k, "e2e": figure(x, x - 0.1, x + 0.1), "tpot": None}
            for name, k, x in targets
        ]
    }


def test_levels_are_distinct_positive_and_sorted() -> None:
    assert [1, 4, 16] == parse_levels("16,1,4")
    for bad in ("", "0,4", "4,4", "a"):
        with pytest.raises(SweepError):
            parse_levels(bad)


def test_the_best_k_per_level_then_zero_where_even_the_best_is_slower() -> None:
    """K = 5 wins at 1, K = 3 at 4 and 8, nothing pays at 32: merged into three ranges that
    start at 1 and leave no gap."""
    cells = surface(
        [
            (1, verdict(("K=3", 3, 1.6), ("K=5", 5, 1.9))),
            (4, verdict(("K=3", 3, 1.3), ("K=5", 5, 1.2))),
            (8, verdict(("K=3", 3, 1.05), ("K=5", 5, 0.9))),
            (32, verdict(("K=3", 3, 0.8), ("K=5", 5, 0.7))),
        ]
    )
    table = recommend(cells, [1, 4, 8, 32])
    assert [[1, 1, 5], [2, 8, 3], [9, 32, 0]] == table["num_speculative_tokens_per_batch_size"]
    last = table["ranges"][-1]
    assert ("K=3", 0.8) == (last["best"]["target"], last["best"]["estimate"])


def test_a_level_without_a_comparison_gets_no_speculation() -> None:
    cells = surface([(1, verdict(("spec", 4, 1.5))), (8, {"targets": []})])
    table = recommend(cells, [1, 8])
    assert [[1, 1, 4], [2, 8, 0]] == table["num_speculative_tokens_per_batch_size"]
