"""The slice table on a terminal (rich), for `demo` and `replay`; the console they print on."""

from __future__ import annotations

from typing import Literal

from rich.console import Console
from rich.table import Table
from specwatch.analysis.analyzer import SliceView, Snapshot
from specwatch.analysis.counting.stats import SliceStats
from specwatch.conventions import Zone

ZONE_STYLE: dict[str, str] = {
    Zone.GREEN: "bold green",
    Zone.YELLOW: "bold yellow",
    Zone.RED: "bold red",
    Zone.INSUFFICIENT: "dim",
    Zone.NOT_APPLICABLE: "dim italic",
}


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# Piped output has no width to fit: rich's default of 80 columns would wrap rows and cut
# cells (`summariz…`), which a script reading the table cannot undo.
UNBOUNDED = 100_000


def console(stderr: bool = False) -> Console:
    """A terminal's own width, or no wrapping at all when the output is not a terminal."""
    found = Console(stderr=stderr)
    return found if found.is_terminal else Console(stderr=stderr, width=UNBOUNDED)


def show(out: Console, table: Table) -> None:
    """A table on a terminal as drawn; piped, one plain line per row (columns apart by
    spaces, no box characters, the title on a line of its own) for grep, awk and cut."""
    if not out.is_terminal:
        if table.title:
            out.print(table.title, soft_wrap=True, highlight=False)
        table.title = None
        table.box = None
    out.print(table)


Period = Literal["window", "since_start"]


def slice_table(
    snapshot: Snapshot, title: str, period: Period = "window", confidence: float = 0.95
) -> Table:
    """One row per slice and per model rollup, over the window or since the first record
    (statistics recomputed at `confidence` for the latter); the zone is the latest verdict."""
    table = Table(title=title, title_justify="left", expand=False, pad_edge=False)
    table.add_column("model")
    table.add_column("ctx_bucket")
    table.add_column("task")
    level = f"{confidence:.0%}"
    for name in ("reqs", "trials", f"alpha [{level} CI]", "rate", "tau"):
        table.add_column(name, justify="right")
    table.add_column("zone")

    def row(view: SliceView, bucket: str) -> None:
        window = view.since_start if period == "since_start" else view.window
        stats = SliceStats.of(window, confidence) if period == "since_start" else view.stats
        alpha = "-"
        if stats.alpha is not None:
            a = stats.alpha
            alpha = f"{a.estimate:.3f} [{a.lower:.2f}, {a.upper:.2f}]"
        table.add_row(
            view.key.model,
            bucket,
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
        row(view, "all")
    return table
