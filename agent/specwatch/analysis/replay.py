"""[compiled] Feed recorded requests through the live analysis, on their own clock."""

from __future__ import annotations

from collections.abc import Iterable

from specwatch.analysis.analyzer import Analyzer
from specwatch.core import heap
from specwatch.core.records import RequestRecord, SpecConfig
from specwatch.settings import Settings

# Evaluations a replay runs at most: 1.6 years of log time at the default 10 s. A log that
# spans more has a wrong timestamp (milliseconds for seconds, a zero): evaluating through the
# gap would take days of CPU, so it is refused, naming the first and last record.
MAX_EVALUATIONS = 5_000_000


# models a replay keeps apart: more than any file holds (each model is a few rows of state)
UNCAPPED_MODELS = 1 << 31


class SpanTooLong(ValueError):
    pass


def replay(
    records: Iterable[RequestRecord], settings: Settings, config: SpecConfig | None = None
) -> tuple[Analyzer, float]:
    """The analyzer after every record, zones evaluated at the live interval; and the end time.

    `config`: the speculative config the records ran under (a cycle log's config line).
    Records are taken in time order; zones are evaluated at the same interval as live, on the
    records' timestamps, so the verdicts follow the same path they did. SpanTooLong when they
    span more than MAX_EVALUATIONS evaluations.
    """
    # A file is not a pod: `limits.max_models` bounds the series a live pod exports, and a
    # replay exports none, so every model the logs hold keeps its name (no `other`).
    limits = settings.limits.model_copy(update={"max_models": UNCAPPED_MODELS})
    settings = settings.model_copy(update={"limits": limits})
    # The records are read whole (to put them in time order) and live to the end, none in
    # a cycle: the collector would walk them again and again as they pile up. It is off
    # while they are read, and they are frozen out of its view for the analysis (given back
    # to it after, so a caller that lives on collects them as usual).
    with heap.paused(freeze=True) as frozen:
        ordered = sorted(records, key=lambda record: record.ts)
    try:
        _check_span(ordered, settings.zones.evaluation_interval_seconds)
        return _analysed(ordered, settings, config)
    finally:
        if frozen:
            heap.thaw()


def _analysed(
    ordered: list[RequestRecord], settings: Settings, config: SpecConfig | None
) -> tuple[Analyzer, float]:
    interval = settings.zones.evaluation_interval_seconds
    start = ordered[0].ts if ordered else 0.0
    analyzer = Analyzer(settings, started=start)
    analyzer.set_config(config)
    next_evaluation = start + interval
    for record in ordered:
        while record.ts >= next_evaluation:
            analyzer.evaluate(next_evaluation)
            next_evaluation += interval
        analyzer.ingest(record)
    end = ordered[-1].ts if ordered else start
    analyzer.evaluate(end)
    return analyzer, end


def _check_span(ordered: list[RequestRecord], interval: float) -> None:
    if not ordered:
        return
    first, last = ordered[0], ordered[-1]
    span = last.ts - first.ts
    if span / interval > MAX_EVALUATIONS:
        raise SpanTooLong(
            f"the records span {span / 86400:,.0f} days of log time, more than "
            f"{MAX_EVALUATIONS:,} evaluations at {interval:g} s: a timestamp is wrong "
            f"(milliseconds for seconds?): the first record is {first.request_id!r} at "
            f"ts {first.ts}, the last {last.request_id!r} at ts {last.ts}"
        )
