"""Feed recorded requests through the live analysis, on their own clock."""

from __future__ import annotations

import gc
from collections.abc import Iterable

from specwatch.analysis.analyzer import Analyzer
from specwatch.model import RequestRecord
from specwatch.settings import Settings


def replay(records: Iterable[RequestRecord], settings: Settings) -> tuple[Analyzer, float]:
    """The analyzer after every record, zones evaluated at the live interval; and the end time.

    Records are taken in time order; zones are evaluated at the same interval as live, on the
    records' timestamps, so the verdicts follow the same path they did.
    """
    # The records are read whole (to put them in time order) and live to the end, none in
    # a cycle: the collector would walk them again and again as they pile up. It is off
    # while they are read, and they are frozen out of its view for the analysis (given back
    # to it after, so a caller that lives on collects them as usual).
    collecting = gc.isenabled()
    gc.disable()
    try:
        ordered = sorted(records, key=lambda record: record.ts)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
    try:
        return _analysed(ordered, settings)
    finally:
        if collecting:
            gc.unfreeze()


def _analysed(ordered: list[RequestRecord], settings: Settings) -> tuple[Analyzer, float]:
    interval = settings.zones.evaluation_interval_seconds
    start = ordered[0].ts if ordered else 0.0
    analyzer = Analyzer(settings, started=start)
    next_evaluation = start + interval
    for record in ordered:
        while record.ts >= next_evaluation:
            analyzer.evaluate(next_evaluation)
            next_evaluation += interval
        analyzer.ingest(record)
    end = ordered[-1].ts if ordered else start
    analyzer.evaluate(end)
    return analyzer, end
