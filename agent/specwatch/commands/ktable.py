"""`specwatch advise`'s K table by batch size, from recorded requests (analysis/load.py)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from specwatch.analysis.load import KTable, LoadBuckets, LoadTable
from specwatch.analysis.windows import Counts, RatioSums
from specwatch.conventions import VARIANT_BASELINE
from specwatch.model import RequestRecord
from specwatch.settings import Settings


def _measured_cost(
    spec: RatioSums, base: RatioSums, counts: Counts, min_requests: int
) -> float | None:
    """c from decode times over the whole log: (TPOT_spec * tau / TPOT_base - 1) / K."""
    if min(spec.n, base.n) < min_requests or spec.y <= 0 or base.x <= 0 or not counts.steps:
        return None
    tau = 1.0 + counts.accepted / counts.steps
    cost = (spec.x / spec.y * tau / (base.x / base.y) - 1.0) / counts.max_drafted
    return min(0.99, max(0.0, cost))


def k_tables(
    records: Sequence[RequestRecord], settings: Settings, cost_ratio: float | None
) -> list[tuple[KTable, float, str]]:
    """Per model with load on its records: the K table, the cost ratio c for its modelled
    ranges, and where c came from (`given`, `measured` from A/B decode times, `default`)."""
    max_position = settings.limits.max_position
    table = LoadTable(LoadBuckets(settings.load.batch_edges), max_position)
    pooled: dict[str, tuple[RatioSums, RatioSums, Counts]] = {}  # spec, baseline, steps
    for record in records:
        if record.in_flight is None:
            continue
        baseline = record.variant == VARIANT_BASELINE
        spec = record.spec
        counts = None
        if not baseline and spec is not None and spec.steps:
            counts = Counts.of_request(spec.drafted, spec.accepted, max_position)
        tpot, tokens = record.latency.tpot, record.completion_tokens
        table.add(record.model, record.in_flight, counts, baseline, tpot, tokens)
        sums = pooled.setdefault(record.model, (RatioSums(), RatioSums(), Counts(max_position)))
        if counts is not None:
            sums[2].merge(counts)
        if tpot is not None and tokens is not None and tokens >= 2:
            (sums[1] if baseline else sums[0]).add(tpot * (tokens - 1), tokens - 1)
    out = []
    minimum = settings.speedup.min_baseline_requests
    for model in table.models():
        if cost_ratio is not None:
            cost, source = cost_ratio, "given"
        else:
            measured = _measured_cost(*pooled[model], minimum)
            cost, source = (
                (measured, "measured")
                if measured is not None
                else (settings.speedup.default_cost_ratio, "default")
            )
        k_table = table.k_table(model, cost, settings.zones.confidence, minimum)
        if k_table is not None:
            out.append((k_table, cost, source))
    return out


def print_k_tables(console: Console, tables: list[tuple[KTable, float, str]]) -> None:
    for k_table, cost, source in tables:
        view = Table(title=f"{k_table.model}: K by batch size (K in use {k_table.k_in_use})")
        for name in ("batch size", "K", "how", "gain", "interval", "requests spec / base"):
            view.add_column(name, justify="right")
        for row in k_table.ranges:
            interval = "" if row.lower is None else f"{row.lower:.2f}-{row.upper:.2f}"
            view.add_row(
                f"{row.first}-{row.last}", str(row.k), row.method or "(no traffic)",
                "" if row.gain is None else f"{row.gain:.2f}", interval,
                f"{row.spec_requests} / {row.baseline_requests}",
            )  # fmt: skip
        console.print(view)
        console.print(
            f'--speculative-config ... "num_speculative_tokens_per_batch_size": '
            f"{k_table.schedule()}  (modelled ranges at c = {cost:g}, {source})"
        )
