"""Binding a port, with the failure said in one line that names the flag setting the port."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from aiohttp import web


class ListenError(OSError):
    """A port that could not be bound: what, where, and which flag moves it."""

    def __init__(self, code: int | None, line: str) -> None:
        super().__init__(code, line)
        self.line = line

    def __str__(self) -> str:  # the line alone, without OSError's "[Errno 98]"
        return self.line


@contextlib.contextmanager
def binding(host: str, port: int, flag: str) -> Iterator[None]:
    """Turn the event loop's bind error (uvloop: `error while attempting to bind on address
    ('127.0.0.1', 8001): address already in use`, with a traceback) into one line."""
    try:
        yield
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            reason = f"port {port} is taken by another process; give another {flag}"
        elif error.errno in (errno.EACCES, errno.EPERM):
            reason = f"not allowed to listen on port {port} (below 1024?); give another {flag}"
        elif error.errno == errno.EADDRNOTAVAIL:
            reason = "no such address on this machine"
        else:
            reason = os.strerror(error.errno) if error.errno else str(error)
        raise ListenError(
            error.errno, f"cannot listen on {host}:{port} ({flag}): {reason}"
        ) from None


async def serve_app(
    app: web.Application, host: str, port: int, flag: str, cancel: bool = False
) -> web.AppRunner:
    """An aiohttp application listening on host:port (0: a port the OS chooses); its runner,
    whose `addresses` say where. `cancel`: a handler is cancelled when its client leaves."""
    runner = web.AppRunner(app, handler_cancellation=cancel, access_log=None)
    await runner.setup()
    try:
        with binding(host, port, flag):
            await web.TCPSite(runner, host, port).start()
    except ListenError:
        await runner.cleanup()
        raise
    return runner
