"""[compiled] One request's upstream response on its way to the client, piece by piece.

An Exchange is the upstream connection's sink (proxy/pool.py): the head, each body piece
and the end arrive as callbacks and go straight to the client connection, one write each. For
an observed request it also keeps what the analysis needs: the JSON body (up to the response
limit, and while the shared byte budget of proxy/budget.py allows) or, for a stream, the usage
event (proxy/stream.py), the time to first byte, and the outcome. Whatever happens, `finished`
resolves exactly once; `settle` then hands what the payload holds of the budget to the
observation, and gives back the rest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from specwatch.conventions import Outcome, ParseReason
from specwatch.engines import sglang
from specwatch.proxy import wire
from specwatch.proxy.budget import ByteBudget, Held
from specwatch.proxy.replies import UPSTREAM_LOST_EVENT, openai_error
from specwatch.proxy.stream import StreamRewriter

if TYPE_CHECKING:
    from specwatch.core.health import Health
    from specwatch.proxy.pool import UpstreamConnection
    from specwatch.proxy.server import Writer

log = structlog.get_logger("specwatch.proxy")

_EVENT_STREAM = b"text/event-stream"


def failure(error: BaseException) -> str:
    """An error in words: an OS error's reason (`Connection refused`), else its kind and
    message."""
    if isinstance(error, TimeoutError):
        return "no answer in time"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class Exchange:
    __slots__ = (
        "_budget",
        "_client",
        "_deferred",
        "_head_sent",
        "_health",
        "_held",
        "_max",
        "_observed",
        "_parts",
        "_rewriter",
        "_started",
        "_stream",
        "_unread",
        "capture",
        "choice_stats",
        "done",
        "ended",
        "finished",
        "first_byte",
        "flush",
        "hold",
        "inject",
        "outcome",
        "parse_failure",
        "payload",
        "sent",
        "status",
        "strip",
        "upstream",
    )

    def __init__(
        self,
        client: Writer,
        health: Health,
        max_response: int,
        budget: ByteBudget,
        observed: bool,
    ) -> None:
        self._client = client
        # the upstream calls these around each read: the client's own, without a hop here
        self.hold: Callable[[], None] = client.hold
        self.flush: Callable[[], None] = client.flush
        self._health = health
        self._max = max_response
        self._observed = observed
        self._stream = False
        self._started = time.perf_counter()
        self._rewriter: StreamRewriter | None = None  # set when the answer is relayed as SSE
        self._parts: list[bytes] = []
        self._budget = budget
        self._held = Held(budget)  # what _parts or capture hold of it: their size
        self._unread: str | None = None  # why the body is no longer kept (a ParseReason)
        self._head_sent = False
        self.outcome: str | None = None
        self.status: int | None = None  # the upstream's HTTP status, once it answered
        self.payload: bytes | None = None
        self.choice_stats: bytes | None = None  # a stream's finishing chunk with per-choice stats
        self.first_byte: float | None = None
        # perf_counter when the request went to the upstream, when the upstream's answer was
        # read to its end, and when its last bytes were handed to the client (0: not yet):
        # what specwatch adds to a request is its span less the upstream's (proxy/proxy.py)
        self.sent = self.done = self.ended = 0.0
        self.parse_failure: str | None = None
        self.capture: list[bytes] | None = None  # a shadowed stream's bytes (a body is the payload)
        self.inject = False  # specwatch asked for the usage chunk: the client must not see it
        # specwatch asked SGLang for its details: taken out of the answer (engines/sglang.py)
        self.strip = False
        # the head of an answer held whole to take the details out: (status, reason, headers,
        # the upstream's length)
        self._deferred: tuple[int, bytes, wire.Headers, int | None] | None = None
        self.upstream: UpstreamConnection | None = None
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def begin(self, stream: bool, started: float, capture: bool) -> None:
        self._stream, self._started = stream, started
        if capture:
            self.capture = []

    def output(self, stream: bool) -> bytes | None:
        """What the client got, for a shadow comparison: the body, or a stream's captured
        bytes (None when the stream was too large to keep)."""
        if not stream:
            return self.payload
        return None if self.capture is None else b"".join(self.capture)

    # --- the upstream's side (upstream.Sink) ---------------------------------------------------

    def on_head(self, status: int, reason: bytes, headers: wire.Headers) -> None:
        length = wire.header(headers, b"content-length")
        if not self._observed:
            self._health.passthrough[f"{status // 100}xx"] += 1
        else:
            self.status = status
            ok = 200 <= status < 300
            if not ok:
                self.outcome = Outcome.UPSTREAM_ERROR
            elif wire.header(headers, b"content-encoding") not in (None, b"identity"):
                self.outcome = Outcome.PARSE_ERROR
                self.parse_failure = ParseReason.ENCODED_BODY
            kind = wire.header(headers, b"content-type") or b""
            if self.outcome is None and kind.split(b";", 1)[0].strip().lower() == _EVENT_STREAM:
                self._rewriter = StreamRewriter(
                    self.inject, self._max, Held(self._budget), strip=self.strip
                )
                length = None  # the stream may be rewritten: chunked to the client
        size = int(length) if length is not None and length.isdigit() else None
        if self._rewriter is None and self.outcome is None and self.strip:
            # its length changes when the details come out: the head goes with the body
            self._deferred = (status, reason, wire.forwardable(headers), size)
            return
        self._client.start(status, reason, wire.forwardable(headers), size)
        self._head_sent = True

    def on_body(self, data: bytes) -> None:
        if self.first_byte is None:
            self.first_byte = time.perf_counter() - self._started
        rewriter = self._rewriter
        if rewriter is None:
            if self._deferred is not None:
                self._keep(data)
                if self._unread is not None:  # too large to hold: relayed as it comes on
                    self._client.write(data)
                return
            self._client.write(data)
            if self._observed and self._unread is None and self.outcome is None:
                self._keep(data)
            return
        if self.capture is not None:
            if self._held.size + len(data) > self._max or not self._held.take(len(data)):
                self.capture = None  # too large to compare, or no room: not shadowed
                self._held.release()
            else:
                self.capture.append(data)
        out = rewriter.feed(data)
        self.payload = rewriter.usage  # kept even if the client leaves now
        self.choice_stats = rewriter.choice_stats
        if out:
            self._client.write(out)

    def _keep(self, data: bytes) -> None:
        """One more piece of an observed body; past the response limit, or when the budget has
        no room for it, what was kept goes at once: the body will not be read."""
        if self._held.size + len(data) > self._max:
            self._unread = ParseReason.RESPONSE_TOO_LARGE
        elif not self._held.take(len(data)):
            self._unread = ParseReason.MEMORY_BUDGET
        else:
            self._parts.append(data)
            return
        if self._deferred is not None:  # what was held goes out as it was, details and all
            self._send_head(self._deferred[3])
            for part in self._parts:
                self._client.write(part)
        self._parts = []
        self._held.release()

    def _send_head(self, length: int | None) -> None:
        """The deferred head, at last."""
        assert self._deferred is not None
        status, reason, headers, _ = self._deferred
        self._deferred = None
        self._client.start(status, reason, headers, length)
        self._head_sent = True

    def settle(self) -> Held | None:
        """Once the exchange is over: what of the budget its payload (and a stream's finishing
        chunk) hold from now on, for the observation to carry to the analysis, which releases
        it once read; the rest is given back. When the budget has no room for a stream's usage
        event, it is dropped and the request counted as unread (a body was held already: it
        always fits)."""
        self._held.release()
        self._parts = []
        kept = len(self.payload or b"") + len(self.choice_stats or b"")
        carried = Held(self._budget)
        if not kept or carried.take(kept):
            return carried if kept else None
        self.payload = self.choice_stats = None
        if self.outcome is None:
            self.outcome = Outcome.PARSE_ERROR
            self.parse_failure = ParseReason.MEMORY_BUDGET
        return None

    def on_complete(self) -> None:
        self.done = time.perf_counter()
        if self._rewriter is not None:
            rest = self._stream_ended()
            if rest:
                self._client.write(rest)
        elif self._observed and self.outcome is None:
            if self._unread is not None:
                self.outcome = Outcome.PARSE_ERROR
                self.parse_failure = self._unread
            else:
                self.payload = b"".join(self._parts)
                self._parts = []
                if self._deferred is not None:
                    answer = sglang.without_details(self.payload) or self.payload
                    self._send_head(len(answer))
                    self._client.write(answer)
        self._client.end()
        self.ended = time.perf_counter()
        self._finish()

    def _stream_ended(self) -> bytes:
        """The stream is over: its outcome from what the rewriter saw, and what is still to
        send (a held last chunk)."""
        rewriter = self._rewriter
        assert rewriter is not None
        rest = rewriter.finish()
        self.parse_failure = rewriter.parse_failure
        if rewriter.errored:
            self.outcome = Outcome.UPSTREAM_ERROR
        elif (
            rewriter.usage is None
            and rewriter.choice_stats is None
            and rewriter.parse_failure is not None
        ):
            self.outcome = Outcome.PARSE_ERROR
        self.payload = rewriter.usage
        self.choice_stats = rewriter.choice_stats
        return rest

    def on_error(
        self, error: BaseException, internal: bool = False, target: str | None = None
    ) -> None:
        """The upstream could not be reached (`target`: its address), failed, or fell silent
        for too long; or (`internal`) the proxy's own code failed, which its caller logged:
        answered alike, in words a client's log can show."""
        if self.finished.done():
            return
        if self._observed:
            self.outcome = Outcome.UPSTREAM_FAILED
        if not internal:
            log.warning(
                "upstream_failed", error=repr(error), upstream=target, head_sent=self._head_sent
            )
        if not self._head_sent:
            if not self._observed:
                self._health.passthrough["5xx"] += 1
            where = f"upstream {target}" if target else "upstream"
            what = "internal error" if internal else f"{where} failed"
            headers, body = openai_error(502, f"specwatch: {what}: {failure(error)}")
            self._client.respond(502, headers, body)
        else:
            if self._rewriter is not None:
                self._client.write(self._rewriter.finish() + UPSTREAM_LOST_EVENT)
            self._client.broken()  # the body is cut short: the client must see it broken
        self._finish()

    # --- the client's side (server.Abandonable) -------------------------------------------------

    def client_gone(self) -> None:
        if self.finished.done():
            return
        rewriter = self._rewriter
        if rewriter is not None and rewriter.done:
            # [DONE] went out: the client had the whole stream and closed before the
            # upstream's last bytes (its chunked terminator) arrived. A completed exchange.
            self._stream_ended()
            if self.upstream is not None:
                self.upstream.abort()
            self._finish()
            return
        if self._observed:
            self.outcome = Outcome.CLIENT_ABORTED
        if self.upstream is not None:
            self.upstream.abort()
        self._finish()

    def moved(self, connection: UpstreamConnection) -> bool:
        """The request goes out again on `connection` (its kept one was stale): False when
        the client has left meanwhile."""
        if self.finished.done():
            return False
        self.upstream = connection
        if self._client.paused:
            connection.pause()
        return True

    def pause(self) -> None:
        if self.upstream is not None:
            self.upstream.pause()

    def resume(self) -> None:
        if self.upstream is not None:
            self.upstream.resume()

    def _finish(self) -> None:
        if self._rewriter is not None:
            self._rewriter.drop()
        if not self.finished.done():
            self.finished.set_result(None)
