"""The slice table on a terminal (rich), for `demo` and `replay`."""

from __future__ import annotations

from rich.table import Table

from specwatch.analysis.analyzer import SliceView, Snapshot
from specwatch.conventions import Zone

ZONE_STYLE: dict[str, str] = {
    Zone.GREEN: "bold green",
    Zone.YELLOW: "bold yellow",
    Zone.RED: "bold red",
    Zone.INSUFFICIENT: "dim",
}


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def slice_table(snapshot: Snapshot, title: str) -> Table:
    table = Table(title=title, title_justify="left", expand=False, pad_edge=False)
    table.add_column("ctx_bucket")
    table.add_column("task")
    for name in ("reqs", "trials", "alpha [95% CI]", "rate", "tau"):
        table.add_column(name, justify="right")
    table.add_column("zone")

    def row(view: SliceView, first: str) -> None:
        stats, window = view.stats, view.window
        alpha = "-"
        if stats.alpha is not None:
            a = stats.alpha
            alpha = f"{a.estimate:.3f} [{a.lower:.2f}, {a.upper:.2f}]"
        table.add_row(
            first,
            view.key.task,
            str(window.requests),
            str(window.trials),
            alpha,
            _fmt(stats.rate.estimate if stats.rate else None),
            _fmt(stats.tau.estimate if stats.tau else None, 2),
            f"[{ZONE_STYLE[view.zone]}]{view.zone}[/]",
        )

    for view in snapshot.slices:
        row(view, view.key.ctx_bucket)
    table.add_section()
    for view in snapshot.rollups:
        row(view, f"{view.key.model}: all")
    return table
