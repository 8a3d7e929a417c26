"""The JSON shape of an interval and of the per-drafted-length figures: /status and
`specwatch analyze` write them alike (light imports: analyze starts without the analyzer)."""

from __future__ import annotations

from typing import Any

from specwatch.analysis.counts import Counts
from specwatch.analysis.stats import Interval


def interval_fields(interval: Interval | None) -> dict[str, float | None] | None:
    if interval is None:
        return None
    return {
        "estimate": interval.estimate,
        "lower": interval.lower,
        "upper": interval.upper,
        "design_effect": interval.design_effect,
    }


def by_drafted_length(counts: Counts) -> list[dict[str, Any]]:
    """Rate and tau per drafted length: with variable K the overall rate mixes lengths."""
    return [
        {
            "drafted": d,
            "steps": n,
            "accepted": a,
            "rate": a / (d * n) if d else None,
            "tau": 1.0 + a / n,
        }
        for d, n, a in counts.by_drafted_length()
    ]
