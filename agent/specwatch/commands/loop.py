"""The event loop every long-running command runs on, and waiting for a stop signal."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Coroutine
from typing import Any


def settle_heap() -> None:
    """What the process made so far (modules, classes, functions, settings: ~60k objects) lives
    as long as it does: out of the cycle collector's sight, a full collection walks only what
    came after. Every full collection holds the event loop, every proxied stream with it, and
    these alone took ~40 ms of each here. Objects made later are collected as before."""
    gc.collect()
    gc.freeze()


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
