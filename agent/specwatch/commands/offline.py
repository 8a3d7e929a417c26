"""The commands that run once and exit: generate, replay, advise, snapshot, check-config."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from specwatch.analysis.analyzer import Snapshot
from specwatch.analysis.counts import Counts
from specwatch.analysis.load import LoadTable
from specwatch.conventions import ALL
from specwatch.model import RequestRecord, SpecConfig
from specwatch.settings import Settings
from specwatch.store.cyclelog import LineError


def check_config(settings: Settings) -> int:
    print(json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True))
    print("specwatch: config ok", file=sys.stderr)
    return 0


def run_generate(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.gen.alert_rules import GenerateError
    from specwatch.gen.writer import render, stale, write

    try:
        files = render(settings, args.time_scale)
    except GenerateError as error:
        print(f"specwatch: generate: {error}", file=sys.stderr)
        return 2
    if args.check:
        if not args.out.is_dir():
            print(f"specwatch: generate: --out {args.out}: no such directory", file=sys.stderr)
            return 2
        outdated = stale(files, args.out)
        for name in outdated:
            print(f"specwatch: generate: {name} is out of date", file=sys.stderr)
        if outdated:
            print(
                "specwatch: generate: run `specwatch generate` and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"specwatch: generate: {len(files)} files up to date", file=sys.stderr)
        return 0
    try:
        for path in write(files, args.out):
            print(f"specwatch: generate: wrote {path}", file=sys.stderr)
    except OSError as error:  # a read-only or mistyped --out: said, not a traceback
        where = str(args.out)
        print(f"specwatch: generate: cannot write under {where!r}: {error}", file=sys.stderr)
        return 1
    return 0


def read_logs(
    files: list[Path], command: str
) -> tuple[list[RequestRecord], list[LineError], SpecConfig | None] | None:
    """Every record of the cycle logs, the bad lines, and the config they ran under (the
    latest config line read: a log's records ran under the config its file starts with);
    None (said on stderr) when a file is unreadable or holds no record."""
    from specwatch.store.cyclelog import read_cycle_logs

    errors: list[LineError] = []
    configs: list[SpecConfig] = []
    try:
        records = list(read_cycle_logs(files, errors, configs))
    except OSError as error:
        print(f"specwatch: {command}: {error}", file=sys.stderr)
        return None
    if not records:
        _report_bad_lines(errors, command)
        names = ", ".join(str(path) for path in files)
        print(f"specwatch: {command}: no records in {names}", file=sys.stderr)
        return None
    return records, errors, configs[-1] if configs else None


def replayed(
    files: list[Path], settings: Settings, command: str
) -> tuple[Snapshot, list[LineError], LoadTable, int] | None:
    """Cycle logs through the live analysis: its snapshot at the end, the bad lines, its load
    table and the number of records; None (said on stderr) when a file is unreadable, holds
    no record, or the records span more time than a replay evaluates."""
    from specwatch.analysis.replay import SpanTooLong, replay

    read = read_logs(files, command)
    if read is None:
        return None
    records, errors, config = read
    try:
        analyzer, end = replay(records, settings, config)
    except SpanTooLong as error:
        print(f"specwatch: {command}: {error}", file=sys.stderr)
        return None
    return analyzer.snapshot(end), errors, analyzer.load_table, len(records)


NAMED_BAD_LINES = 5  # each named on stderr; the rest counted (the JSON output names them all)


def _report_bad_lines(errors: list[LineError], command: str) -> None:
    """The first bad lines, each with its reason, and how many there were: a file that is not
    a cycle log (a README given by mistake) is a few lines on stderr, not one per line."""
    for bad in errors[:NAMED_BAD_LINES]:
        print(f"specwatch: {command}: {bad.path}:{bad.line}: {bad.reason}", file=sys.stderr)
    if len(errors) > NAMED_BAD_LINES:
        more = len(errors) - NAMED_BAD_LINES
        print(f"specwatch: {command}: ... and {more} more bad line(s)", file=sys.stderr)
    if errors:
        print(f"specwatch: {command}: {len(errors)} bad line(s) skipped", file=sys.stderr)


def run_replay(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.export.status import Reading, status_document
    from specwatch.httpjson import dumps

    found = replayed(args.files, settings, "replay")
    if found is None:
        return 1
    snapshot, errors, _, records = found
    if args.json:
        document = status_document(Reading(snapshot))
        document["replay"] = {
            "files": [str(path) for path in args.files],
            "records": records,
            "bad_lines": [asdict(bad) for bad in errors],
        }
        sys.stdout.write(dumps(document).decode() + "\n")
    else:
        from specwatch.commands.table import Period, console, show, slice_table

        start, end = snapshot.started, snapshot.at
        period: Period
        if args.last_window:
            period = "window"
            shown = f"the last window: {snapshot.window_seconds:g} s to {_utc(end)}"
        else:
            period = "since_start"
            shown = f"since the first record: {_utc(start)} to {_utc(end)} ({end - start:,.0f} s)"
        title = (
            f"replay of {len(args.files)} file(s), {records} record(s); {shown}; "
            f"zone: the verdict at the end"
        )
        confidence = settings.zones.confidence
        show(console(), slice_table(snapshot, title, period, confidence))
    _report_bad_lines(errors, "replay")
    return 0


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def run_advise(args: argparse.Namespace, settings: Settings) -> int:
    from rich.table import Table

    from specwatch.analysis.advisor import advice_for
    from specwatch.analysis.stats import SliceStats
    from specwatch.commands.ktable import k_tables, print_k_tables
    from specwatch.httpjson import dumps

    if args.cost_ratio is not None and not 0 <= args.cost_ratio < 1:
        print("specwatch: advise: --cost-ratio must be in [0, 1)", file=sys.stderr)
        return 2
    found = replayed(args.files, settings, "advise")
    if found is None:
        return 1
    snapshot, errors, load, _ = found
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
    if len(below) == len(snapshot.rollups):
        _report_bad_lines(errors, "advise")
        return 1
    judged = {view.key.model for view in below}
    tables = [
        entry for entry in k_tables(load, settings, args.cost_ratio) if entry[0].model not in judged
    ]
    costs = {table.model: cost for table, cost, _ in tables}
    default_cost = settings.speedup.default_cost_ratio
    results = []
    for view in (*snapshot.rollups, *snapshot.slices):
        counts = view.since_start
        if view.key.model in judged or not _enough(counts, settings):
            continue  # a slice below the gate: its K would be a guess from a few requests
        stats = SliceStats.of(counts, settings.zones.confidence)
        cost = costs.get(
            view.key.model, default_cost if args.cost_ratio is None else args.cost_ratio
        )
        advice = advice_for(counts, stats, cost)
        if advice is not None:
            results.append((view.key, counts.steps, advice, cost))
    if args.json:
        document = {
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
            "batch_size": [
                {
                    "model": table.model,
                    "k_in_use": table.k_in_use,
                    "cost_ratio": cost,
                    "cost_ratio_source": source,
                    "num_speculative_tokens_per_batch_size": table.schedule(),
                    "ranges": [asdict(row) for row in table.ranges],
                }
                for table, cost, source in tables
            ],
        }
        sys.stdout.write(dumps(document).decode() + "\n")
    else:
        from specwatch.commands.table import console as terminal
        from specwatch.commands.table import show

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
    _report_bad_lines(errors, "advise")
    return 0


def _enough(counts: Counts, settings: Settings) -> bool:
    """The zones' own gate: as many requests and verified draft tokens as a verdict needs."""
    zones = settings.zones
    return counts.requests >= zones.min_requests and counts.trials >= zones.min_trials


def run_snapshot(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.commands.snapshot_png import SnapshotError, render_snapshot

    try:
        path = render_snapshot(args.prometheus, args.out, settings, args.model, args.minutes)
    except SnapshotError as error:
        print(f"specwatch: snapshot: {error}", file=sys.stderr)
        return 1
    print(f"specwatch: snapshot: wrote {path}", file=sys.stderr)
    return 0
