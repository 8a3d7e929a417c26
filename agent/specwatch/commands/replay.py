"""`specwatch replay`: cycle logs through the live analysis, evaluation by evaluation on the
records' clock; the slice table (or /status's document) at the end."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from datetime import UTC, datetime

from specwatch.commands.shared.cyclelogs import replayed, report_bad_lines
from specwatch.core import heap
from specwatch.settings import Settings


def run(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.core.httpjson import dumps
    from specwatch.export.reading import Reading
    from specwatch.export.status import status_document

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
        from specwatch.commands.shared.table import Period, console, show, slice_table

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
    report_bad_lines(errors, "replay")
    heap.kept_to_the_end()  # what the replay read and made lives to the process' end
    return 0


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
