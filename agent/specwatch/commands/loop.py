"""The event loop every long-running command runs on, and waiting for a stop signal."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any


def run_loop(coroutine: Coroutine[Any, Any, int]) -> int:
    """Run on uvloop where it is installed (Linux, macOS): a faster loop for the proxy path."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - e.g. Windows
        return asyncio.run(coroutine)
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
