"""Cycle logs read for the offline commands (replay, advise, worst): every record, the bad lines
said on stderr in a few lines, and the records run through the live analysis."""

from __future__ import annotations

import sys
from pathlib import Path

from specwatch.analysis.analyzer import Snapshot
from specwatch.analysis.speed.load import LoadTable
from specwatch.core import heap
from specwatch.core.records import RequestRecord, SpecConfig
from specwatch.settings import Settings
from specwatch.store.cyclelog import LineError


def read_logs(
    files: list[Path], command: str
) -> tuple[list[RequestRecord], list[LineError], SpecConfig | None] | None:
    """Every record of the cycle logs, the bad lines, and the config they ran under (the
    latest config line read: a log's records ran under the config its file starts with);
    None (said on stderr) when a file is unreadable or holds no record."""
    from specwatch.store.cyclelog import read_cycle_logs

    errors: list[LineError] = []
    configs: list[SpecConfig] = []
    # Every record read is kept, none in a cycle: the collector, left on, would walk the
    # growing pile again and again (about 5% of a replay), for nothing to collect.
    try:
        with heap.paused():
            records = list(read_cycle_logs(files, errors, configs))
    except OSError as error:
        print(f"specwatch: {command}: {error}", file=sys.stderr)
        return None
    if not records:
        report_bad_lines(errors, command)
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


def report_bad_lines(errors: list[LineError], command: str) -> None:
    """The first bad lines, each with its reason, and how many there were: a file that is not
    a cycle log (a README given by mistake) is a few lines on stderr, not one per line."""
    for bad in errors[:NAMED_BAD_LINES]:
        print(f"specwatch: {command}: {bad.path}:{bad.line}: {bad.reason}", file=sys.stderr)
    if len(errors) > NAMED_BAD_LINES:
        more = len(errors) - NAMED_BAD_LINES
        print(f"specwatch: {command}: ... and {more} more bad line(s)", file=sys.stderr)
    if errors:
        print(f"specwatch: {command}: {len(errors)} bad line(s) skipped", file=sys.stderr)
