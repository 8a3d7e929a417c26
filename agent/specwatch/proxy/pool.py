"""The proxy's connections to an upstream: a keep-alive pool of asyncio protocols, each parsing
its responses with httptools and handing every piece to the request's sink as it arrives (no
task, no await per piece). A sink pauses the connection when its client cannot keep up.

A kept connection the upstream closed as the next request went out on it (llama.cpp's server
closes it after every streamed answer, saying nothing; any server at its idle timeout) loses
that request before a byte of the answer: it is sent once more on a new connection, as nginx
does for a cached upstream connection. A request whose answer had begun is never sent twice."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Protocol, cast
from urllib.parse import urlsplit

import httptools

from specwatch.proxy.wire import Headers


class Sink(Protocol):
    """Where one upstream response goes."""

    def on_head(self, status: int, reason: bytes, headers: Headers) -> None: ...
    def on_body(self, data: bytes) -> None: ...
    def on_complete(self) -> None: ...
    def on_error(self, error: BaseException) -> None: ...
    def hold(self) -> None: ...
    def flush(self) -> None: ...
    def moved(self, connection: UpstreamConnection) -> bool: ...


class UpstreamError(ConnectionError):
    pass


class UpstreamConnection(asyncio.Protocol):
    """One keep-alive connection; at most one request at a time."""

    def __init__(self, pool: UpstreamPool) -> None:
        self._pool = pool
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._sink: Sink | None = None
        self._reason = b""
        self._headers: Headers = []
        self._head_only = False
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self.reusable = True
        self.reused = False  # taken from the idle pool (else: new for this request)
        self._sent = b""  # the request on it, until its answer begins (to send it again)

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._last_read = self._loop.time()
        self._sent = b""  # the answer has begun: it is never sent again
        sink = self._sink
        if sink is not None:
            sink.hold()  # everything this read carries leaves in one write
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(UpstreamError(f"unreadable response: {error}"))
        finally:
            if sink is not None:
                sink.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        self._pool.forget(self)
        sink, sent = self._sink, self._sent
        if sink is not None and self.reused and sent:
            self._sink, self._sent = None, b""
            self._cancel_timer()
            self._pool.send_again(sent, sink, self._head_only)
        elif sink is not None:
            self._fail(exc or UpstreamError("the upstream closed the connection"))

    # --- httptools callbacks -----------------------------------------------------------------

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        sink = self._sink
        if sink is None:
            return
        if not self._parser.should_keep_alive():
            self.reusable = False
        sink.on_head(self._parser.get_status_code(), self._reason, self._headers)
        if self._head_only:  # a HEAD: no body follows, whatever the length says
            self.reusable = False
            self._finish()

    def on_body(self, data: bytes) -> None:
        if self._sink is not None:
            self._sink.on_body(data)

    def on_message_complete(self) -> None:
        self._finish()

    # --- requests ----------------------------------------------------------------------------

    def send(self, data: bytes, sink: Sink, head_only: bool = False) -> None:
        assert self.transport is not None
        self._sink, self._head_only = sink, head_only
        self._reason, self._headers = b"", []
        self._last_read = self._loop.time()
        self._timer = self._loop.call_later(self._pool.read_timeout, self._check_timeout)
        self._sent = data
        self.transport.write(data)

    def pause(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def abort(self) -> None:
        """The request is abandoned (its client left): the connection goes with it."""
        self._sink = None
        self.reusable = False
        self._cancel_timer()
        if self.transport is not None:
            self.transport.abort()

    def _check_timeout(self) -> None:
        idle = self._loop.time() - self._last_read
        if idle >= self._pool.read_timeout:
            self._fail(TimeoutError(f"no data from the upstream for {idle:.0f} s"))
        else:
            self._timer = self._loop.call_later(self._pool.read_timeout - idle, self._check_timeout)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _finish(self) -> None:
        sink, self._sink = self._sink, None
        self._sent = b""
        self._cancel_timer()
        if sink is None:
            return
        if self.reusable:
            self._pool.release(self)
        elif self.transport is not None:
            self.transport.close()
        sink.on_complete()

    def _fail(self, error: BaseException) -> None:
        sink, self._sink = self._sink, None
        self.reusable = False
        self._cancel_timer()
        if self.transport is not None:
            self.transport.abort()
        if sink is not None:
            sink.on_error(error)


class UpstreamPool:
    """Idle keep-alive connections to one upstream, closed after `keepalive` seconds idle.

    Idle connections wait in release order with the time they went idle; one sweep timer
    per pool (armed while any wait) closes those past `keepalive`, so a request costs no
    timer of its own to keep its connection."""

    def __init__(
        self, base: str, keepalive: float, read_timeout: float, connect_timeout: float = 10.0
    ) -> None:
        parts = urlsplit(base)
        if parts.scheme != "http":
            raise ValueError(f"the proxy speaks plain HTTP to its upstream, got {base!r}")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.authority = parts.netloc.encode()
        self.keepalive = keepalive
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self._idle: deque[tuple[UpstreamConnection, float]] = deque()  # oldest first
        self._open: set[UpstreamConnection] = set()
        self._sweep: asyncio.TimerHandle | None = None
        self._again: set[asyncio.Task[None]] = set()  # requests being sent once more
        self.sent_again = 0  # how many (a kept connection closed under them)

    async def acquire(self) -> UpstreamConnection:
        loop = asyncio.get_running_loop()
        while self._idle:
            connection, since = self._idle.pop()  # the most recently used: the warmest
            transport = connection.transport
            if transport is None or transport.is_closing():
                continue
            if loop.time() - since < self.keepalive:
                connection.reused = True
                return connection
            transport.close()  # past its keep-alive (the sweep had not come yet)
        return await self._connect()

    async def _connect(self) -> UpstreamConnection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.connect_timeout):
            _, protocol = await loop.create_connection(
                lambda: UpstreamConnection(self), self.host, self.port
            )
        self._open.add(protocol)
        return protocol

    def send_again(self, data: bytes, sink: Sink, head_only: bool) -> None:
        """A request lost with a stale kept connection (module docstring): on a new one."""
        self.sent_again += 1
        task = asyncio.get_running_loop().create_task(self._send_again(data, sink, head_only))
        self._again.add(task)
        task.add_done_callback(self._again.discard)

    async def _send_again(self, data: bytes, sink: Sink, head_only: bool) -> None:
        try:
            connection = await self._connect()
        except (OSError, TimeoutError) as error:
            sink.on_error(error)
            return
        if sink.moved(connection):
            connection.send(data, sink, head_only)
        else:  # its client left meanwhile
            self.release(connection)

    def release(self, connection: UpstreamConnection) -> None:
        loop = asyncio.get_running_loop()
        self._idle.append((connection, loop.time()))
        if self._sweep is None:
            self._sweep = loop.call_later(self.keepalive, self._expire)

    def _expire(self) -> None:
        """Close what has been idle `keepalive` seconds; come back for the next one."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        idle = self._idle
        while idle and now - idle[0][1] >= self.keepalive:
            connection, _ = idle.popleft()
            if connection.transport is not None:
                connection.transport.close()
        if idle:
            self._sweep = loop.call_later(self.keepalive - (now - idle[0][1]), self._expire)

    def forget(self, connection: UpstreamConnection) -> None:
        self._open.discard(connection)
        for i, (idle, _) in enumerate(self._idle):
            if idle is connection:
                del self._idle[i]
                break

    def close(self) -> None:
        for task in self._again:
            task.cancel()
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        self._idle.clear()
        for connection in list(self._open):
            with contextlib.suppress(Exception):
                if connection.transport is not None:
                    connection.transport.close()
        self._open.clear()
