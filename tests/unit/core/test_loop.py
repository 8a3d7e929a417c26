"""The event loop long-running commands run on (commands/loop.py)."""

from __future__ import annotations

import gc

from specwatch.core.heap import FULL_COLLECTION_AFTER
from specwatch.core.loop import run_loop


def test_the_cycle_collector_is_set_for_the_event_loop_before_it_runs() -> None:
    """Modules, classes and settings live as long as the process: out of the collector's
    sight. A full collection (it holds the event loop) comes after FULL_COLLECTION_AFTER middle
    ones, young and middle ones as Python has them."""
    gc.unfreeze()
    thresholds = gc.get_threshold()

    seen: list[object] = []

    async def collector() -> int:
        seen.extend((gc.get_freeze_count(), gc.get_threshold()))
        return 0

    try:
        assert 0 == run_loop(collector())
        frozen, during = seen
        assert isinstance(frozen, int)
        assert frozen > 10_000
        assert during == (*thresholds[:2], FULL_COLLECTION_AFTER) != thresholds
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
