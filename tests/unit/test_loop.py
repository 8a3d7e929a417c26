"""The event loop long-running commands run on (commands/loop.py)."""

from __future__ import annotations

import gc

from specwatch.commands.loop import run_loop


def test_what_exists_before_the_loop_runs_is_out_of_the_cycle_collectors_sight() -> None:
    """Modules, classes and settings live as long as the process: a full collection, which
    holds the event loop, walks only what the sidecar made after them."""
    gc.unfreeze()

    async def frozen() -> int:
        return gc.get_freeze_count()

    try:
        assert run_loop(frozen()) > 10_000
    finally:
        gc.unfreeze()
