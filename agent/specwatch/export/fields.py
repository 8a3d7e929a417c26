"""The JSON shapes the documents share, each built here once: an interval, a group's
statistics (/status, replay, analyze), a comparison's sides and rows (/status `change`,
compare), a K table by batch size (advise, analyze). Light imports: analyze and compare start
without the analyzer."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import Interval, SliceStats

if TYPE_CHECKING:
    from specwatch.analysis.compare.alpha import ModelComparison, SliceComparison
    from specwatch.analysis.counting.sums import Sums
    from specwatch.analysis.speed.load import KTable


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


def statistics_fields(counts: Counts, stats: SliceStats) -> dict[str, Any]:
    """A group's sums and what they give: alpha-hat, rate and tau with their intervals, per
    position and per drafted length."""
    return {
        **counts.as_dict(),
        "alpha": interval_fields(stats.alpha),
        "rate": None if stats.rate is None else stats.rate.estimate,
        "rate_interval": interval_fields(stats.rate),
        "tau": None if stats.tau is None else stats.tau.estimate,
        "tau_interval": interval_fields(stats.tau),
        "per_position": list(stats.per_position),
        "by_drafted_length": by_drafted_length(counts),
    }


def comparison_side(sums: Sums) -> dict[str, Any]:
    return {
        "requests": sums.requests,
        "accepted": sums.x,
        "trials": sums.y,
        "alpha": sums.x / sums.y if sums.y else None,
    }


def comparison_row(
    row: SliceComparison, names: tuple[str, ...], sides: tuple[str, str]
) -> dict[str, Any]:
    """One compared group: its key under `names`, both sides (named `sides`), alpha's
    difference with its family-wise interval, and the verdict."""
    d = row.difference
    return {
        **dict(zip(names, row.key, strict=True)),
        sides[0]: comparison_side(row.before),
        sides[1]: comparison_side(row.after),
        "difference": None
        if d is None
        else {"estimate": d.estimate, "lower": d.lower, "upper": d.upper},
        "verdict": row.verdict,
    }


def model_comparison(
    model: ModelComparison, names: tuple[str, ...], sides: tuple[str, str]
) -> dict[str, Any]:
    """A model's rollup compared (its key under `names`), its overall change at the after
    side's mix, and the mix's movement (PSI, caveat)."""
    overall = model.overall
    return {
        **comparison_row(model.rollup, names, sides),
        "overall": None
        if overall is None
        else {"rate": overall.rate, "mix": overall.mix, "total": overall.total},
        "mix_psi": model.mix_psi,
        "caveat": model.caveat,
    }


def k_table_fields(table: KTable, cost: float, source: str) -> dict[str, Any]:
    """One model's K by batch size, with the draft cost it rests on and where that came from."""
    return {
        "model": table.model,
        "k_in_use": table.k_in_use,
        "cost_ratio": cost,
        "cost_ratio_source": source,
        "num_speculative_tokens_per_batch_size": table.schedule(),
        "ranges": [asdict(row) for row in table.ranges],
    }
