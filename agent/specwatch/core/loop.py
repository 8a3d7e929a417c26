"""The event loop every long-running command runs on, and waiting for a stop signal."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import Coroutine
from typing import Any

# a full cycle collection after this many middle ones (Python's default: 10)
FULL_COLLECTION_AFTER = 100


def settle_heap() -> None:
    """The cycle collector, for a process whose event loop every proxied stream waits on.

    What the process made so far (modules, classes, functions, settings) lives as long as it
    does: frozen out of the collector's sight, a full collection walks only what came after.
    And a full collection comes after 100 middle ones instead of 10: at full cardinality each
    scrape keeps its objects until the next, so Python's rule (a full one when the survivors
    since the last reach a quarter of the old generation) did not hold full collections back,
    and each stopped the loop. Young and middle collections are as before; cyclic garbage that
    grew old waits ten times longer (specwatch makes next to none), and RSS stays flat
    (benchmarks/soak.py, benchmarks/metrics_scrape.py; the figures: docs/benchmarks.md,
    section "Figures behind design choices")."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_AFTER)


def run_loop(coroutine: Coroutine[Any, Any, int]) -> int:
    """Run on uvloop where it is installed (Linux, macOS): a faster loop for the proxy path."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - e.g. Windows
        settle_heap()
        return asyncio.run(coroutine)
    settle_heap()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def run_command(name: str, coroutine: Coroutine[Any, Any, int]) -> int:
    """A command that listens until stopped: a failure to start (a port taken, an empty token
    file) is one line naming the command, rc 1."""
    try:
        return run_loop(coroutine)
    except (OSError, ValueError) as error:
        print(f"specwatch: {name}: {error}", file=sys.stderr)
        return 1


async def until_signal() -> int:
    """Wait for SIGTERM or SIGINT; return the signal's number."""
    loop = asyncio.get_running_loop()
    received: asyncio.Future[int] = loop.create_future()

    def on_signal(number: int) -> None:
        if not received.done():
            received.set_result(number)

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, on_signal, int(sig))
    try:
        return await received
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)
