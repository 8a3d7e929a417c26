"""replay(): the live analysis on a log's own clock, and the process left as it was found."""

from __future__ import annotations

import gc

from specwatch.analysis.replay import replay
from specwatch.model import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings


def records(n: int) -> list[RequestRecord]:
    """n requests of 4 steps at K = 3, given newest first."""
    block = SpecDecodeBlock(3, (3,) * 4, (2, 3, 0, 1))
    latency = Latency(ttft=None, tpot=None, e2e=None)
    return [
        RequestRecord(
            ts=float(n - i),
            request_id=str(i),
            model="m",
            task="code",
            outcome="observed",
            prompt_tokens=100,
            completion_tokens=12,
            spec=block,
            latency=latency,
        )
        for i in range(n)
    ]


def test_replay_leaves_the_garbage_collector_as_it_found_it() -> None:
    """It turns the collector off while reading and freezes the records for the analysis: a
    caller that lives on (a test, a command run in-process) gets it back enabled, with
    nothing frozen; one that had it off keeps it off."""
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    analyzer, end = replay(records(50), load_settings())
    assert gc.isenabled()
    assert frozen == gc.get_freeze_count()
    assert 50.0 == end  # in time order, whatever the order given
    gc.disable()
    try:
        replay(records(5), load_settings())
        assert not gc.isenabled()
        assert frozen == gc.get_freeze_count()
    finally:
        gc.enable()
    (view,) = [v for v in analyzer.snapshot(end).rollups if v.key.model == "m"]
    assert 50 * 4 == view.since_start.steps
