"""[compiled] The proxy's client side: one asyncio protocol per client connection, requests parsed
with httptools (llhttp, C), responses written as bytes.

It enforces the limits before a request reaches the proxy's logic: a connection that has not
sent complete request headers within `header_read_timeout` (also the idle keep-alive limit) is
closed (slowloris); a body over `max_request_bytes` gets a 413, one not received within
`body_read_timeout` a 408. A client that goes away, or half-closes, abandons its request.
While a request is handled, further bytes (a pipelined request) wait their turn; reading goes
on, so a disconnect is seen at once. When the client cannot keep up, the current exchange is
told to pause its upstream: the proxy never buffers a stream without bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import unquote

import httptools

from specwatch.proxy import wire
from specwatch.proxy.wire import Headers

if TYPE_CHECKING:
    from specwatch.settings import LimitSettings


@dataclass(slots=True)
class Request:
    method: bytes
    target: bytes  # the raw path and query, as sent
    path: str  # decoded, without the query
    headers: Headers  # names lower-cased
    body: bytes
    keep_alive: bool
    started: float  # loop time when its headers were complete


class Handler(Protocol):
    """The proxy's logic, as the connection sees it."""

    def handle(self, connection: ClientConnection, request: Request) -> asyncio.Task[None]: ...
    def refuse(self, connection: ClientConnection, request: Request, status: int) -> None: ...
    def forget(self, connection: ClientConnection) -> None: ...


class Abandonable(Protocol):
    def client_gone(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...


class Writer(Protocol):
    """What an exchange writes its answer to: a ClientConnection (a protocol, not the class:
    compiled, an argument typed by a native class must be one, and tests pass their own)."""

    paused: bool

    def start(
        self, status: int, reason: bytes | None, headers: Headers, length: int | None
    ) -> None: ...
    def write(self, data: bytes) -> None: ...
    def end(self) -> None: ...
    def hold(self) -> None: ...
    def flush(self) -> None: ...
    def respond(self, status: int, headers: Headers, body: bytes) -> None: ...
    def broken(self) -> None: ...


class ClientConnection(asyncio.Protocol):
    """One client connection: parse, dispatch, write; keep-alive and timeouts."""

    def __init__(self, handler: Handler, limits: LimitSettings, clock: Callable[[], float]) -> None:
        self._handler = handler
        self._limits = limits
        self._clock = clock
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._timer: asyncio.TimerHandle | None = None
        self._url = b""
        self._headers: Headers = []
        self._body: list[bytes] = []
        self._size = 0
        self._started = 0.0
        self._refused = False
        self._pending = b""  # bytes of the next request, while one is handled
        self.busy = False
        self.closed = False
        self.paused = False  # the client's socket buffer is full
        self.exchange: Abandonable | None = None  # the request's upstream exchange, if any
        self.task: asyncio.Task[None] | None = None
        self._chunked = False
        self._held: list[bytes] | None = None  # writes gathered between hold() and flush()
        self._keep_alive = True
        self._http10 = False
        self._head = False  # the request is a HEAD: its answer has no body

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self._arm(self._limits.header_read_timeout_seconds)

    def data_received(self, data: bytes) -> None:
        if self.busy or self._refused:
            self._pending += data
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._close()  # no upgrades through the proxy
        except httptools.HttpParserError:
            if not self.busy:
                self._write_simple(400, b"specwatch: not HTTP/1.1")
            self._close()

    def eof_received(self) -> bool:
        return False  # a half-close ends the request: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._disarm()
        self._handler.forget(self)
        if self.exchange is not None:
            self.exchange.client_gone()
        elif self.task is not None and not self.task.done():
            self.task.cancel()  # waiting for an upstream connection: give up

    def pause_writing(self) -> None:
        self.paused = True
        if self.exchange is not None:
            self.exchange.pause()

    def resume_writing(self) -> None:
        self.paused = False
        if self.exchange is not None:
            self.exchange.resume()

    # --- httptools callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url, self._headers, self._body, self._size = b"", [], [], 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self._started = self._loop.time()
        self._keep_alive = self._parser.should_keep_alive()
        self._http10 = self._parser.get_http_version() == "1.0"
        self._head = self._parser.get_method() == b"HEAD"
        length = wire.header(self._headers, b"content-length")
        if length is not None and length.isdigit() and int(length) > self._limits.max_request_bytes:
            self._refuse(413)
            return
        if wire.header(self._headers, b"expect") == b"100-continue" and self.transport:
            self.transport.write(wire.CONTINUE)
        self._arm(self._limits.body_read_timeout_seconds, self._body_timed_out)

    def on_body(self, data: bytes) -> None:
        if self._refused:
            return
        self._size += len(data)
        if self._size > self._limits.max_request_bytes:
            self._refuse(413)
            return
        self._body.append(data)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._disarm()
        self.busy = True
        self.task = self._handler.handle(self, self._request(b"".join(self._body)))

    # --- the handler's side ------------------------------------------------------------------

    def start(
        self, status: int, reason: bytes | None, headers: Headers, length: int | None
    ) -> None:
        """Write a response head; the body follows with write() and end()."""
        bodiless = self._head or status < 200 or status in (204, 304)
        unframed = length is None and not bodiless
        # HTTP/1.1 forbids chunked framing to a 1.0 client (RFC 9112, 6.1): its body of
        # unknown length is sent as it comes and ended by closing, as nginx does
        self._chunked = unframed and not self._http10
        if unframed and self._http10:
            self._keep_alive = False
        head = wire.response_head(
            status, reason, headers, length, self._keep_alive, bodiless, self._chunked
        )
        self._send(head)

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._chunked:
            data = wire.chunk(data)
        held = self._held  # _send, inline: this runs once per streamed event
        if held is not None:
            held.append(data)
        elif self.transport is not None and not self.closed:
            self.transport.write(data)

    def end(self) -> None:
        if self._chunked:
            self._send(wire.LAST_CHUNK)

    def hold(self) -> None:
        """Gather writes until flush(): what one upstream read brings (a head, several events,
        the last chunk) leaves in one transport write, one system call, in the same order."""
        if self._held is None:
            self._held = []

    def flush(self) -> None:
        held, self._held = self._held, None
        if held and self.transport is not None and not self.closed:
            self.transport.write(held[0] if len(held) == 1 else b"".join(held))

    def _send(self, data: bytes) -> None:
        if self._held is not None:
            self._held.append(data)
        elif self.transport is not None and not self.closed:
            self.transport.write(data)

    def respond(self, status: int, headers: Headers, body: bytes) -> None:
        """A whole response at once (specwatch's own answers)."""
        self.start(status, None, headers, len(body))
        self.write(body)

    def broken(self) -> None:
        """The body was cut short: close, so the client sees a broken response."""
        self._keep_alive = False
        self._close()

    def done(self) -> None:
        """The request is answered: the next one may come (or the connection closes)."""
        self.busy, self.exchange, self.task = False, None, None
        if self.closed:
            return
        if not self._keep_alive:
            self._close()
            return
        self._arm(self._limits.header_read_timeout_seconds)
        if self._pending:
            pending, self._pending = self._pending, b""
            self.data_received(pending)

    # --- inside ------------------------------------------------------------------------------

    def _request(self, body: bytes) -> Request:
        target = self._url
        path = unquote(target.split(b"?", 1)[0].decode("latin-1"))
        method = self._parser.get_method()
        return Request(method, target, path, self._headers, body, self._keep_alive, self._started)

    def _refuse(self, status: int) -> None:
        """413 or 408 before the request reached the proxy's logic; the connection closes."""
        self._refused = True
        self._keep_alive = False
        self._disarm()
        self._handler.refuse(self, self._request(b""), status)
        self._close()

    def _body_timed_out(self) -> None:
        self._timer = None
        if not self.busy:
            self._refuse(408)

    def _write_simple(self, status: int, text: bytes) -> None:
        self._keep_alive = False
        self.respond(status, [(b"content-type", b"text/plain")], text)

    def _arm(self, seconds: float, then: Callable[[], None] | None = None) -> None:
        self._disarm()
        self._timer = self._loop.call_later(seconds, then or self._idle_timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _idle_timed_out(self) -> None:
        self._timer = None
        if not self.busy:
            self._close()

    def _close(self) -> None:
        self.flush()  # what was gathered goes out before the connection closes
        self._disarm()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
