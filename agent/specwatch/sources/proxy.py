"""The reverse proxy in front of vLLM's OpenAI API.

Bytes go back to the client as they arrive. The only change made on the way: a stream whose
client did not ask for usage gets `stream_options.include_usage` upstream, and the usage chunk
it then brings is taken out of what the client receives. The final JSON body, or the usage
chunk, is handed to the analysis queue after the response is done; nothing here parses more
than it must to find it, and nothing here can fail a request that the upstream served.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import structlog
from aiohttp import web

from specwatch.analysis.tasks import features_of
from specwatch.conventions import OBSERVED_PATHS, Header, Outcome, ParseReason, ParseSource
from specwatch.health import Health
from specwatch.settings import Settings
from specwatch.sources.ab import ABRouter
from specwatch.sources.observation import Observation
from specwatch.sources.replies import UPSTREAM_LOST_EVENT, forwardable, openai_error, refusal
from specwatch.sources.shadow import Shadow
from specwatch.sources.stream import StreamRewriter

log = structlog.get_logger("specwatch.proxy")

Submit = Callable[[Observation], None]


@dataclass(slots=True)
class _Exchange:
    """What one observed request has shown so far."""

    outcome: str | None = None
    payload: bytes | None = None
    first_byte: float | None = None
    parse_failure: str | None = None
    capture: list[bytes] | None = None  # a shadowed stream's bytes (a body is the payload)

    def output(self, stream: bool) -> bytes | None:
        """What the client got, for a shadow comparison: the body, or a stream's captured
        bytes (None when the stream was too large to keep)."""
        if not stream:
            return self.payload
        return None if self.capture is None else b"".join(self.capture)


class Proxy:
    """aiohttp handlers of the proxy; `submit` receives one Observation per observed request."""

    def __init__(
        self,
        settings: Settings,
        health: Health,
        submit: Submit,
        clock: Callable[[], float] = time.time,
        router: ABRouter | None = None,
    ) -> None:
        self._settings = settings
        self._upstream = settings.upstream
        self.router = router or ABRouter(settings.ab, settings.upstream, clock)
        self.shadow = Shadow(settings, health, lambda: self.session)
        self._key_header = settings.ab.key_header
        self._health = health
        self._submit = submit
        self._clock = clock
        self._task_header = settings.tasks.header
        self._max_response = settings.limits.max_response_bytes
        self._max_concurrent = settings.limits.max_concurrent_requests
        self._body_timeout = settings.limits.body_read_timeout_seconds
        self._session: aiohttp.ClientSession | None = None
        self.in_flight = 0
        self.draining = False  # shutting down: new requests get a 503, in-flight ones finish

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self._settings.limits.max_request_bytes)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _app: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=10.0, sock_read=self._settings.upstream_timeout_seconds
        )
        self._session = aiohttp.ClientSession(
            timeout=timeout,
            auto_decompress=False,  # pass bytes through as the upstream encoded them
            skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
            connector=aiohttp.TCPConnector(
                limit=0, keepalive_timeout=self._settings.limits.upstream_keepalive_seconds
            ),
        )

    async def _close(self, _app: web.Application) -> None:
        await self.shadow.close()
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "the proxy app has not started"
        return self._session

    async def handle(self, request: web.Request) -> web.StreamResponse:
        observed = request.method == "POST" and request.path in OBSERVED_PATHS
        if self.draining:
            return self._reject(request, observed, 503, "specwatch is shutting down: retry")
        if self.in_flight >= self._max_concurrent:
            return self._reject(
                request, observed, 503, f"specwatch: {self.in_flight} requests in flight: retry"
            )
        self.in_flight += 1
        try:
            if observed:
                return await self._observed(request)
            return await self._passthrough(request)
        finally:
            self.in_flight -= 1

    def _reject(
        self, request: web.Request, observed: bool, status: int, message: str
    ) -> web.Response:
        """Refused by specwatch itself (never sent upstream), in OpenAI's error shape, counted."""
        if observed:
            request_id = request.headers.get(Header.REQUEST_ID) or uuid.uuid4().hex
            self._submit(
                Observation(
                    ts=self._clock(),
                    request_id=request_id,
                    features=features_of(
                        request.path, request.headers.get(self._task_header), None
                    ),
                    outcome=Outcome.REJECTED,
                    stream=False,
                    payload=None,
                    e2e=None,
                    first_byte=None,
                    variant=self.router.variant(self._ab_key(request, request_id)),
                )
            )
        else:
            self._health.passthrough[f"{status // 100}xx"] += 1
        return refusal(status, message)

    # --- every other path: bytes in, bytes out ----------------------------------------------

    async def _passthrough(self, request: web.Request) -> web.StreamResponse:
        data = request.content.iter_any() if request.body_exists else None
        try:
            async with self.session.request(
                request.method,
                self._upstream + request.raw_path,
                headers=forwardable(request.headers),
                data=data,
                allow_redirects=False,
            ) as upstream:
                self._health.passthrough[f"{upstream.status // 100}xx"] += 1
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                response.headers.update(forwardable(upstream.headers))
                if upstream.content_length is not None:
                    response.content_length = upstream.content_length
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response
        except (aiohttp.ClientError, TimeoutError) as error:
            self._health.passthrough["5xx"] += 1
            log.warning("upstream_unreachable", path=request.path, error=repr(error))
            return openai_error(502, f"specwatch: upstream unreachable: {error!r}", "BadGateway")

    # --- completions and chat completions ---------------------------------------------------

    def _ab_key(self, request: web.Request, request_id: str) -> str:
        return request.headers.get(self._key_header) or request_id

    async def _observed(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        request_id = request.headers.get(Header.REQUEST_ID) or uuid.uuid4().hex
        variant = self.router.variant(self._ab_key(request, request_id))
        exchange = _Exchange()
        features = features_of(request.path, request.headers.get(self._task_header), None)
        stream = False
        try:  # from here on, whatever happens, the request lands in exactly one outcome
            try:
                async with asyncio.timeout(self._body_timeout):
                    raw = await request.read()
            except web.HTTPRequestEntityTooLarge:
                exchange.outcome = Outcome.REJECTED
                limit = self._settings.limits.max_request_bytes
                return refusal(413, f"specwatch: body over {limit} bytes")
            except TimeoutError:
                exchange.outcome = Outcome.REJECTED
                return refusal(408, f"specwatch: body not received in {self._body_timeout:g} s")
            body: Any = None
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self._health.parse_error(ParseSource.REQUEST, ParseReason.INVALID_JSON)
            if not isinstance(body, dict):
                body = None
            stream = body is not None and body.get("stream") is True
            inject = False
            if body is not None and stream:
                options = body.get("stream_options")
                if not (isinstance(options, dict) and options.get("include_usage") is True):
                    options = dict(options) if isinstance(options, dict) else {}
                    options["include_usage"] = True
                    raw = orjson.dumps({**body, "stream_options": options})
                    inject = True
            features = features_of(request.path, request.headers.get(self._task_header), body)
            shadowed = self.shadow.wanted(body, variant)
            if shadowed and stream:
                exchange.capture = []
            self._health.proxy_overhead.observe(time.perf_counter() - started)
            upstream = self.router.upstream(variant)
            response = await self._forward(
                request, upstream, raw, stream, inject, exchange, started
            )
            output = exchange.output(stream) if shadowed and exchange.outcome is None else None
            if output:
                assert body is not None
                # The client has its whole answer: the comparison cannot delay it.
                headers = dict(forwardable(request.headers))
                self.shadow.start(request.path, body, headers, output, stream)
            return response
        except asyncio.CancelledError:
            exchange.outcome = Outcome.CLIENT_ABORTED
            raise
        finally:
            self._submit(
                Observation(
                    ts=self._clock(),
                    request_id=request_id,
                    features=features,
                    outcome=exchange.outcome,
                    stream=stream,
                    payload=exchange.payload,
                    e2e=time.perf_counter() - started,
                    first_byte=exchange.first_byte,
                    parse_failure=exchange.parse_failure,
                    variant=variant,
                )
            )

    async def _forward(
        self,
        request: web.Request,
        base: str,
        raw: bytes,
        stream: bool,
        inject: bool,
        exchange: _Exchange,
        started: float,
    ) -> web.StreamResponse:
        headers = forwardable(request.headers)
        response: web.StreamResponse | None = None
        try:
            async with self.session.post(
                base + request.raw_path, data=raw, headers=headers
            ) as upstream:
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                response.headers.update(forwardable(upstream.headers))
                ok = 200 <= upstream.status < 300
                event_stream = upstream.content_type == "text/event-stream"
                if not ok:
                    exchange.outcome = Outcome.UPSTREAM_ERROR
                elif upstream.headers.get("Content-Encoding", "identity") != "identity":
                    exchange.outcome = Outcome.PARSE_ERROR
                    exchange.parse_failure = ParseReason.ENCODED_BODY
                if ok and event_stream and exchange.outcome is None:
                    await response.prepare(request)
                    await self._relay_stream(upstream, response, inject, exchange, started)
                else:
                    if upstream.content_length is not None:
                        response.content_length = upstream.content_length
                    await response.prepare(request)
                    await self._relay_body(upstream, response, exchange, started)
                await response.write_eof()
                return response
        except (aiohttp.ClientError, TimeoutError) as error:
            if isinstance(error, ConnectionResetError):  # the client went away while we wrote
                exchange.outcome = Outcome.CLIENT_ABORTED
                assert response is not None
                return response
            exchange.outcome = Outcome.UPSTREAM_FAILED
            log.warning("upstream_failed", path=request.path, error=repr(error))
            if response is None or not response.prepared:
                return openai_error(502, f"specwatch: upstream failed: {error!r}", "BadGateway")
            if stream:
                await self._try_write(response, UPSTREAM_LOST_EVENT)
            # The body is cut short: close the connection so the client sees it as broken.
            if request.transport is not None:
                request.transport.close()
            return response
        except ConnectionResetError:
            exchange.outcome = Outcome.CLIENT_ABORTED
            return response or web.Response(status=499)

    @staticmethod
    async def _try_write(response: web.StreamResponse, data: bytes) -> None:
        with contextlib.suppress(ConnectionResetError):
            await response.write(data)

    async def _relay_body(
        self,
        upstream: aiohttp.ClientResponse,
        response: web.StreamResponse,
        exchange: _Exchange,
        started: float,
    ) -> None:
        parts: list[bytes] = []
        size = 0
        async for chunk in upstream.content.iter_any():
            if exchange.first_byte is None:
                exchange.first_byte = time.perf_counter() - started
            await response.write(chunk)
            if size <= self._max_response:
                parts.append(chunk)
                size += len(chunk)
        if exchange.outcome is not None:
            return
        if size > self._max_response:
            exchange.outcome = Outcome.PARSE_ERROR
            exchange.parse_failure = ParseReason.RESPONSE_TOO_LARGE
        else:
            exchange.payload = b"".join(parts)

    async def _relay_stream(
        self,
        upstream: aiohttp.ClientResponse,
        response: web.StreamResponse,
        inject: bool,
        exchange: _Exchange,
        started: float,
    ) -> None:
        rewriter = StreamRewriter(inject, self._max_response)
        captured = 0
        async for chunk in upstream.content.iter_any():
            if exchange.first_byte is None:
                exchange.first_byte = time.perf_counter() - started
            if exchange.capture is not None:
                captured += len(chunk)
                if captured > self._max_response:
                    exchange.capture = None  # too large to compare: not shadowed
                else:
                    exchange.capture.append(chunk)
            out = rewriter.feed(chunk)
            exchange.payload = rewriter.usage  # kept even if the client leaves now
            if out:
                await response.write(out)
        rest = rewriter.finish()
        if rest:
            await response.write(rest)
        exchange.parse_failure = rewriter.parse_failure
        if rewriter.errored:
            exchange.outcome = Outcome.UPSTREAM_ERROR
        elif rewriter.usage is None and rewriter.parse_failure is not None:
            exchange.outcome = Outcome.PARSE_ERROR
        exchange.payload = rewriter.usage
