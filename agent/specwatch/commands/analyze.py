"""`specwatch analyze`: acceptance over many cycle logs, grouped as asked, on DuckDB.

What `replay` answers is what the sidecar would have said, evaluation by evaluation; this
answers the aggregate questions of a fleet's logs (by slice, config, track, load, day) at the
speed of a columnar engine. The counts are the sidecar's exactly (tests/integration/
test_analyze.py holds them equal to replay's since_start), the statistics its own code's.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

from specwatch.commands.shared.fleet import (
    Request,
    UsageError,
    aggregated,
    attained,
    engine,
    grouped,
    report_lines,
    request_of,
)
from specwatch.export.fields import interval_fields, k_table_fields, statistics_fields
from specwatch.fleet.groups import Group
from specwatch.fleet.source import SourceError
from specwatch.settings import Settings

DEFAULT_BY = "model,ctx_bucket,task"


def group_fields(group: Group, by: tuple[str, ...], confidence: float) -> dict[str, Any]:
    stats, counts = group.stats, group.counts
    tpot: dict[str, Any] = {}
    if group.decode is not None:  # `--tpot`: the sidecar's goodput over the group
        from specwatch.analysis.speed.goodput import tpot_interval

        interval = tpot_interval(group.decode, confidence)
        tpot = {
            "tpot_seconds": group.decode.x / group.decode.y if group.decode.y > 0 else None,
            "tpot_interval": interval_fields(interval),
            "tpot_requests": group.decode.requests,
        }
    return {
        **dict(zip(by, group.key, strict=True)),
        **statistics_fields(counts, stats),
        **tpot,
    }


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        request = request_of(args, args.by)
        fleet = engine(args)
        if fleet is None:
            print(
                "specwatch: analyze needs DuckDB: pip install 'specwatch[analyze]'",
                file=sys.stderr,
            )
            return 2
        groups, tally = grouped(fleet, request, settings, tpot=args.tpot)
        tables = k_tables(fleet, request, settings, args.cost_ratio) if args.k_table else []
        slos = _attainment(fleet, request, settings) if args.slo else None
    except (UsageError, SourceError) as error:
        print(f"specwatch: analyze: {error}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1
    report_lines(tally, "analyze")
    if not groups:
        print(
            f"specwatch: analyze: no speculative request in {request.files.count} file(s) "
            f"({tally.read} line(s) read)",
            file=sys.stderr,
        )
        return 1
    rows = [group_fields(group, request.by, settings.zones.confidence) for group in groups]
    if args.json:
        document = {
            "by": list(request.by),
            "files": request.files.count,
            "since": request.since,
            "until": request.until,
            "confidence": settings.zones.confidence,
            "lines": tally.lines,
            "groups": rows,
            "k_tables": [k_table_fields(*entry) for entry in tables],
        }
        if slos is not None:
            document["latency_slos"] = slos
        sys.stdout.write(json.dumps(document) + "\n")
    elif args.csv is not None:
        _write_csv(args.csv, rows, request.by, settings.limits.max_position)
    elif args.parquet is not None:
        fleet.write_parquet(args.parquet, [_flat(row, request.by) for row in rows])
    else:
        _print_table(rows, request.by, settings.zones.confidence, tables)
        if slos is not None:
            _print_slos(slos, request.by, settings.zones.confidence)
    return 0


def _attainment(fleet: Any, request: Request, settings: Settings) -> list[dict[str, Any]]:
    """Each latency objective's rows (fleet/slo.py), or UsageError when none is configured."""
    if not settings.latency_slos:
        raise UsageError("--slo: no latency objective configured (latency_slos, in --config)")
    return [
        {**dict(zip(request.by, each.key, strict=True)), **each.fields()}
        for each in attained(fleet, request, settings, request.by)
    ]


def _print_slos(rows: list[dict[str, Any]], by: tuple[str, ...], confidence: float) -> None:
    from rich.table import Table

    from specwatch.commands.shared.table import console, show

    title = f"latency objectives by {', '.join(by)} and variant"
    table = Table(title=title, title_justify="left", pad_edge=False)
    for name in (*by, "variant", "slo"):
        table.add_column(name)
    for name in ("reqs", "good", f"attainment [{confidence:.0%} CI]", "budget left"):
        table.add_column(name, justify="right")
    for row in rows:
        lower, upper = row["attainment_interval"]
        table.add_row(
            *(str(row[name]) for name in (*by, "variant", "slo")),
            str(row["requests"]),
            str(row["good"]),
            f"{row['attainment']:.4f} [{lower:.4f}, {upper:.4f}]",
            f"{row['error_budget_remaining']:.2f}",
        )
    show(console(), table)


def k_tables(
    fleet: Any, request: Request, settings: Settings, cost_ratio: float | None
) -> list[tuple[Any, float, str]]:
    """`advise`'s K table by batch size, over every request read."""
    from specwatch.analysis.counting.slicing import LoadBuckets
    from specwatch.commands.shared.ktable import k_tables as tables_of
    from specwatch.fleet.groups import load_table

    rows = aggregated(fleet, request, settings, ("model", "load"), with_load=True)
    table = load_table(rows, LoadBuckets(settings.load.batch_edges), settings.limits.max_position)
    return tables_of(table, settings, cost_ratio)


def _flat(row: dict[str, Any], by: tuple[str, ...]) -> dict[str, Any]:
    """One group as flat columns (CSV, Parquet): bounds beside their estimates."""
    out = {name: row[name] for name in by}
    for name in ("requests", "spec_steps", "draft_tokens", "accepted_tokens", "trials"):
        out[name] = row[name]
    for name, interval in (
        ("alpha", row["alpha"]),
        ("rate", row["rate_interval"]),
        ("tau", row["tau_interval"]),
    ):
        for part in ("estimate", "lower", "upper"):
            out[name if part == "estimate" else f"{name}_{part}"] = (
                None if interval is None else interval[part]
            )
    alpha = row["alpha"]
    out["design_effect"] = None if alpha is None else alpha["design_effect"]
    if "tpot_seconds" in row:
        interval = row["tpot_interval"]
        out["tpot_seconds"] = row["tpot_seconds"]
        out["tpot_lower"] = None if interval is None else interval["lower"]
        out["tpot_upper"] = None if interval is None else interval["upper"]
        out["tpot_requests"] = row["tpot_requests"]
    out["per_position"] = row["per_position"]
    return out


def _write_csv(path: Path, rows: list[dict[str, Any]], by: tuple[str, ...], most: int) -> None:
    flat = [_flat(row, by) for row in rows]
    positions = max((len(row["per_position"]) for row in flat), default=0)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        names = [name for name in flat[0] if name != "per_position"]
        writer.writerow([*names, *(f"p{i + 1}" for i in range(min(positions, most)))])
        for row in flat:
            writer.writerow([*(row[name] for name in names), *row["per_position"]])
    print(f"specwatch: analyze: wrote {len(flat)} group(s) to {path}", file=sys.stderr)


def _print_table(
    rows: list[dict[str, Any]], by: tuple[str, ...], confidence: float, tables: list[Any]
) -> None:
    from rich.table import Table

    from specwatch.commands.shared.table import console, show

    out = console()
    table = Table(title=f"acceptance by {', '.join(by)}", title_justify="left", pad_edge=False)
    for name in by:
        table.add_column(name)
    level = f"{confidence:.0%}"
    for name in ("reqs", "steps", f"alpha [{level} CI]", "rate", "tau", "per position"):
        table.add_column(name, justify="right")
    for row in rows:
        alpha = row["alpha"]
        shown = (
            "-"
            if alpha is None
            else f"{alpha['estimate']:.3f} [{alpha['lower']:.3f}, {alpha['upper']:.3f}]"
        )
        table.add_row(
            *(str(row[name]) for name in by),
            str(row["requests"]),
            str(row["spec_steps"]),
            shown,
            "-" if row["rate"] is None else f"{row['rate']:.3f}",
            "-" if row["tau"] is None else f"{row['tau']:.3f}",
            " ".join(f"{p:.2f}" for p in row["per_position"]),
        )
    show(out, table)
    if tables:
        from specwatch.commands.shared.ktable import print_k_tables

        print_k_tables(out, tables)
