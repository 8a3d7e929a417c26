"""The event loop every long-running command runs on, and waiting for a stop signal."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from specwatch.core.heap import settle_heap


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
