"""`specwatch advise`'s K table by batch size, from the replayed analysis (analysis/speed/load)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from specwatch.analysis.speed.load import KTable, LoadTable
from specwatch.commands.shared.table import show
from specwatch.settings import Settings


def k_tables(
    table: LoadTable, settings: Settings, cost_ratio: float | None
) -> list[tuple[KTable, float, str]]:
    """Per model with load on its records: the K table, the cost ratio c for its modelled
    ranges, and where c came from (`given`, `measured` from A/B decode times, `default`)."""
    out = []
    minimum = settings.speedup.min_baseline_requests
    for model in table.models():
        if cost_ratio is not None:
            cost, source = cost_ratio, "given"
        else:
            measured = table.measured_cost(model, minimum)
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
                f"{row.first}-{row.last}",
                str(row.k),
                row.method or "(no traffic)",
                "" if row.gain is None else f"{row.gain:.2f}",
                interval,
                f"{row.spec_requests} / {row.baseline_requests}",
            )
        show(console, view)
        console.print(
            f'--speculative-config ... "num_speculative_tokens_per_batch_size": '
            f"{k_table.schedule()}  (modelled ranges at c = {cost:g}, {source})"
        )
