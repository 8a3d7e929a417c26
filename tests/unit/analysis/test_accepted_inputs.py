"""Whatever the cycle-log reader accepts, the rest of specwatch takes: replay, evaluation,
snapshot, both /metrics writers (the same text), the status document and the terminal table.

The fuzzers check that each reader raises only its own failure; the faults found since were
downstream of a reader that accepted the input: a K past limits.max_position broke every scrape
after it, a timestamp near a double's range hung the replay, a NaN vLLM counter ended the
scraper. This property test drives accepted records, with the ranges the readers allow, through
every consumer of an analysis.
"""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from rich.console import Console
from specwatch.analysis.replay import replay
from specwatch.commands.shared.table import slice_table
from specwatch.core.health import Health
from specwatch.core.httpjson import dumps
from specwatch.core.records import RequestRecord
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition
from specwatch.export.reading import Reading
from specwatch.export.status import status_document
from specwatch.settings import load_settings
from specwatch.store.cyclelog import MAX_TS, BadLine, from_line

from tests.support import examples

SETTINGS = load_settings(
    limits={"max_position": 4, "max_models": 3},
    zones={"min_trials": 5, "min_requests": 2, "min_dwell_seconds": 0},
    drift={"bucket_seconds": 10, "baseline_buckets": 6, "min_baseline_buckets": 2,
           "gap_buckets": 1, "min_bucket_trials": 1},
    speedup={"min_baseline_requests": 2},
)  # fmt: skip


@st.composite
def steps(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    k = draw(st.sampled_from([1, 3, 4, 5, 40]))  # around max_position (4), and far past it
    n = draw(st.integers(0, 12))
    drafted = draw(st.lists(st.sampled_from([0, k, k, k, max(1, k - 1)]), min_size=n, max_size=n))
    accepted = [draw(st.integers(0, d)) for d in drafted]
    return drafted, accepted


@st.composite
def line(draw: st.DrawFn, start: float) -> dict[str, Any]:
    drafted, accepted = draw(steps())
    baseline = draw(st.booleans()) and draw(st.booleans())
    duration = st.one_of(st.none(), st.floats(0.0, 1e6), st.sampled_from([0.0, 1e300]))
    return {
        "v": 1,
        "ts": draw(st.one_of(st.floats(start, start + 600.0), st.sampled_from([0.0, MAX_TS - 1]))),
        "request_id": "r",
        "model": draw(st.sampled_from(["a", "b", "c", "d", 'q"\\\n'])),
        "task": draw(st.sampled_from(["code", "chat", "other", "%s", ""])),
        "prompt_tokens": draw(st.sampled_from([0, 1, 511, 512, 2047, 40_000, 2**62])),
        "completion_tokens": draw(st.integers(0, 500)),
        "num_spec_tokens": 0 if baseline else max(drafted, default=0),
        "per_step_drafted": [] if baseline else drafted,
        "per_step_accepted": [] if baseline else accepted,
        "ttft_ms": draw(duration),
        "tpot_ms": draw(duration),
        "e2e_ms": draw(duration),
        "variant": "baseline" if baseline else draw(st.sampled_from(["spec", "x"])),
        "in_flight": draw(st.one_of(st.none(), st.integers(1, 2**62))),
    }


def accepted(lines: list[dict[str, Any]]) -> list[RequestRecord]:
    records = []
    for fields in lines:
        try:
            records.append(from_line(json.dumps(fields).encode()))
        except BadLine:
            continue
    return records


HUGE_TPOT = {
    "v": 1, "ts": 1_764_400_000.0, "request_id": "r", "model": "a", "task": "code",
    "prompt_tokens": 0, "completion_tokens": 2, "num_spec_tokens": 0, "per_step_drafted": [0],
    "per_step_accepted": [0], "ttft_ms": None, "tpot_ms": 1e300, "e2e_ms": None,
    "variant": "spec", "in_flight": 1,
}  # fmt: skip


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(line(1_764_400_000.0), max_size=25), st.booleans())
@example([HUGE_TPOT], False)  # the goodput's second moments past a float's range
@example([HUGE_TPOT, {**HUGE_TPOT, "tpot_ms": 1e-300, "in_flight": 9}] * 20, False)
def test_every_accepted_record_goes_through_analysis_and_every_output(
    lines: list[dict[str, Any]], spans_years: bool
) -> None:
    records = accepted(lines)
    if not spans_years:  # keep the replay's evaluations few: the 0 / year 9999 stamps go
        records = [r for r in records if 1_764_399_000 < r.ts < 1_764_401_000]
    if not records:
        return
    if max(r.ts for r in records) - min(r.ts for r in records) > 10_000:
        return  # refused as too long a span: tests/unit/analysis/test_replay.py
    analyzer, end = replay(records, SETTINGS)
    analyzer.evaluate(end + 60.0)
    snapshot = analyzer.snapshot(end + 60.0)
    reading = Reading(snapshot, Health().snapshot())
    collector = SpecwatchCollector(lambda: reading)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    assert Exposition(collector).render() == generate_latest(registry)
    json.loads(dumps(status_document(reading)))
    text = io.StringIO()
    Console(file=text, width=200).print(slice_table(snapshot, "replay"))
    assert "replay" in text.getvalue()
