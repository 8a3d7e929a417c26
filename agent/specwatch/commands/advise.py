"""`specwatch advise`: the draft length K per model and slice from cycle logs, and by batch size
(the K table)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from specwatch.analysis.analyzer import Snapshot
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.speed.advisor import Advice, advice_for
from specwatch.analysis.speed.load import KTable
from specwatch.commands.shared.cyclelogs import replayed, report_bad_lines
from specwatch.commands.shared.ktable import k_tables, print_k_tables
from specwatch.conventions import ALL
from specwatch.core.records import SliceKey
from specwatch.export.fields import k_table_fields
from specwatch.settings import Settings

Result = tuple[SliceKey, int, Advice, float]  # a slice, its steps, its advice, the cost used
Tables = list[tuple[KTable, float, str]]  # a model's K table, its cost and the cost's source


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.cost_ratio is not None and not 0 <= args.cost_ratio < 1:
        print("specwatch: advise: --cost-ratio must be in [0, 1)", file=sys.stderr)
        return 2
    found = replayed(args.files, settings, "advise")
    if found is None:
        return 1
    snapshot, errors, load, _ = found
    thin = _thin_models(snapshot, settings)
    if len(thin) == len(snapshot.rollups):
        report_bad_lines(errors, "advise")
        return 1
    tables = [
        entry for entry in k_tables(load, settings, args.cost_ratio) if entry[0].model not in thin
    ]
    results = _advice(snapshot, settings, tables, thin, args.cost_ratio)
    if args.json:
        from specwatch.core.httpjson import dumps

        sys.stdout.write(dumps(_document(results, tables)).decode() + "\n")
    else:
        _print(results, tables)
    report_bad_lines(errors, "advise")
    return 0


def _thin_models(snapshot: Snapshot, settings: Settings) -> set[str]:
    """The models with too little data for advice, each said on stderr."""
    zones = settings.zones
    below = [view for view in snapshot.rollups if not _enough(view.since_start, settings)]
    for view in below:
        counts = view.since_start
        print(
            f"specwatch: advise: {view.key.model}: {counts.requests} request(s) and "
            f"{counts.trials} verified draft tokens since the first record; advice needs "
            f"{zones.min_requests} and {zones.min_trials} (zones.min_requests, zones.min_trials)",
            file=sys.stderr,
        )
    return {view.key.model for view in below}


def _advice(
    snapshot: Snapshot,
    settings: Settings,
    tables: Tables,
    thin: set[str],
    cost_ratio: float | None,
) -> list[Result]:
    """K per rollup and slice past the zones' gate, at the model's cost (its K table's, else
    --cost-ratio, else the configured default)."""
    costs = {table.model: cost for table, cost, _ in tables}
    default_cost = settings.speedup.default_cost_ratio if cost_ratio is None else cost_ratio
    results = []
    for view in (*snapshot.rollups, *snapshot.slices):
        counts = view.since_start
        if view.key.model in thin or not _enough(counts, settings):
            continue  # a slice below the gate: its K would be a guess from a few requests
        stats = SliceStats.of(counts, settings.zones.confidence)
        cost = costs.get(view.key.model, default_cost)
        advice = advice_for(counts, stats, cost)
        if advice is not None:
            results.append((view.key, counts.steps, advice, cost))
    return results


def _document(results: list[Result], tables: Tables) -> dict[str, Any]:
    return {
        "slices": [
            {
                "model": key.model,
                "ctx_bucket": key.ctx_bucket,
                "task": key.task,
                "spec_steps": steps,
                "cost_ratio": cost,
                **asdict(advice),
            }
            for key, steps, advice, cost in results
        ],
        "batch_size": [k_table_fields(table, cost, source) for table, cost, source in tables],
    }


def _print(results: list[Result], tables: Tables) -> None:
    from rich.table import Table

    from specwatch.commands.shared.table import console as terminal
    from specwatch.commands.shared.table import show

    console = terminal()
    for key, steps, advice, cost in results:
        if key.ctx_bucket != ALL:
            continue
        table = Table(title=f"{key.model}: {steps} steps, c = {cost:g}")
        for name in ("K", "tokens/step", "predicted speedup", ""):
            table.add_column(name, justify="right")
        low, high = advice.range
        for k, expected, speedup in advice.table:
            mark = "best" if k == advice.best_k else ("in range" if low <= k <= high else "")
            table.add_row(str(k), f"{expected:.3f}", f"{speedup:.3f}", mark)
        show(console, table)
        console.print(f"advice: K={advice.best_k} (range {low}-{high}); {advice.note}")
    console.print("per slice (best K, range):")
    for key, steps, advice, _ in results:
        if key.ctx_bucket != ALL:
            low, high = advice.range
            console.print(
                f"  {key.ctx_bucket:>8} {key.task:<14} K={advice.best_k} ({low}-{high}), "
                f"{steps} steps"
            )
    print_k_tables(console, tables)


def _enough(counts: Counts, settings: Settings) -> bool:
    """The zones' own gate: as many requests and verified draft tokens as a verdict needs."""
    zones = settings.zones
    return counts.requests >= zones.min_requests and counts.trials >= zones.min_trials
