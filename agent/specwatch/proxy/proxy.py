"""The reverse proxy in front of vLLM's OpenAI API, on asyncio protocols (uvloop) and httptools.

Bytes go back to the client as they arrive, one write per piece the upstream sent. The only
changes made on the way: a stream whose client did not ask for usage gets
`stream_options.include_usage` upstream, and the usage chunk it then brings is taken out of
what the client receives (proxy/stream.py); and SGLang is asked for its per-request details,
which are taken out again (engines/sglang.py; its non-streamed answer is then held whole). The
final JSON body, or the usage chunk, is handed to the analysis queue after the response is
done; nothing here parses more than it must to find it, and nothing here can fail a request
the upstream served. Every other path is relayed unobserved. Upstream connections are kept
alive in a pool per upstream (A/B: two).
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson
import structlog

from specwatch.conventions import (
    NATIVE_PATHS,
    OBSERVED_PATHS,
    Header,
    Outcome,
    ParseReason,
    ParseSource,
)
from specwatch.core.health import Health
from specwatch.engines import sglang
from specwatch.engines.detect import LLAMACPP, SGLANG, VLLM
from specwatch.proxy import wire
from specwatch.proxy.ab import ABRouter
from specwatch.proxy.budget import ByteBudget
from specwatch.proxy.exchange import Exchange
from specwatch.proxy.observation import Observation
from specwatch.proxy.pool import UpstreamPool
from specwatch.proxy.replies import openai_error
from specwatch.proxy.server import ClientConnection, Request
from specwatch.proxy.shadow import Shadow
from specwatch.proxy.tasks import RequestFeatures, features_of
from specwatch.settings import Settings

log = structlog.get_logger("specwatch.proxy")

Submit = Callable[[Observation], None]
_REQUEST_ID = Header.REQUEST_ID.lower().encode()


_USAGE_OPTION = b'"stream_options":{"include_usage":true},'


def with_usage(raw: bytes, body: dict[str, Any]) -> bytes | None:
    """A streaming request's body (`raw`, read as `body`) asking for the usage chunk too.

    Without `stream_options` the member is written in after the opening brace: every byte the
    client sent stays as it was (a number keeps its spelling: orjson would write an integer
    past 2^64 as a float, `1e5` as `100000.0`). With `stream_options` but no include_usage
    the body is encoded again with it; None when orjson cannot (nested past 254 levels).
    A client's `continuous_usage_stats` is taken out then: vLLM honours it only with
    include_usage, so this client, direct, would get no usage in its chunks, and through
    specwatch it would get usage in every one (only the final usage chunk is taken out).
    """
    if "stream_options" not in body:  # (a streaming body has a member: the comma is right)
        at = raw.index(b"{") + 1
        return raw[:at] + _USAGE_OPTION + raw[at:]
    options = body["stream_options"]
    kept = options if isinstance(options, dict) else {}
    kept = {name: value for name, value in kept.items() if name != "continuous_usage_stats"}
    try:
        return orjson.dumps({**body, "stream_options": {**kept, "include_usage": True}})
    except TypeError:
        return None


class Proxy:
    """The proxy port; `submit` receives one Observation per observed request."""

    def __init__(
        self,
        settings: Settings,
        health: Health,
        submit: Submit,
        router: ABRouter,
        budget: ByteBudget,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self.router = router
        self._key_header = settings.ab.key_header.lower().encode()
        self._task_header = settings.tasks.header.lower().encode()
        self._health = health
        self._submit = submit
        self._clock = clock
        self._max_response = settings.limits.max_response_bytes
        # what is held of responses to read them, shared with the analysis queue (runtime.py)
        self.budget = budget
        self.shadow = Shadow(settings, health, self._shared_session, budget)
        self._max_concurrent = settings.limits.max_concurrent_requests
        self._pools: dict[str, UpstreamPool] = {}
        self._server: asyncio.Server | None = None
        self._connections: set[ClientConnection] = set()
        self._session: aiohttp.ClientSession | None = None
        self._id_prefix = secrets.token_hex(11)  # 22 hex digits + a 10-digit counter: 32, as uuid4
        self._ids = itertools.count()
        self._load: dict[str, int] = {}  # observed requests in flight per upstream
        self.in_flight = 0
        self.draining = False  # shutting down: new requests get a 503, in-flight ones finish
        # the engine upstream (engines/detect.py), which says what is asked on a client's
        # behalf: vLLM's data comes with a stream's usage; llama.cpp sends its own unasked;
        # SGLang's details come when asked (engines/sglang.py). Set by the sidecar.
        self.engine = VLLM

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self, host: str, port: int) -> int:
        """Listen; the bound port (0 asks the OS for one)."""
        limits = self._settings.limits
        for base in {self.router.spec_upstream, self.router.baseline_upstream}:
            self._pools[base] = UpstreamPool(
                base, limits.upstream_keepalive_seconds, self._settings.upstream_timeout_seconds
            )
        loop = asyncio.get_running_loop()

        def connection() -> ClientConnection:
            client = ClientConnection(self, limits, self._clock)
            self._connections.add(client)
            return client

        self._server = await loop.create_server(connection, host, port)
        return int(self._server.sockets[0].getsockname()[1])

    async def drain(self, seconds: float) -> None:
        """Refuse new requests (503) and wait up to `seconds` for those in flight to finish."""
        self.draining = True
        log.info("draining", in_flight=self.in_flight, seconds=seconds)
        deadline = asyncio.get_running_loop().time() + seconds
        while self.in_flight and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        if self.in_flight:
            log.warning("drain_timeout", still_in_flight=self.in_flight)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for client in list(self._connections):
            if client.transport is not None:
                client.transport.close()
        await self.shadow.close()
        for pool in self._pools.values():
            pool.close()
        if self._session is not None:
            await self._session.close()

    def _shared_session(self) -> aiohttp.ClientSession:
        return self.session

    @property
    def session(self) -> aiohttp.ClientSession:
        """An aiohttp session for the rare paths that are not the proxy's (the shadow check)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=10.0, sock_read=self._settings.upstream_timeout_seconds
                ),
                auto_decompress=False,
            )
        return self._session

    # --- requests ----------------------------------------------------------------------------

    def handle(self, connection: ClientConnection, request: Request) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(self._handle(connection, request))

    async def _handle(self, connection: ClientConnection, request: Request) -> None:
        observed = request.method == b"POST" and request.path in OBSERVED_PATHS
        try:
            if self.draining:
                self.refuse(connection, request, 503, "specwatch is shutting down: retry")
            elif self.in_flight >= self._max_concurrent:
                message = f"specwatch: {self.in_flight} requests in flight: retry"
                self.refuse(connection, request, 503, message)
            else:
                self.in_flight += 1
                try:
                    if observed:
                        await self._observed(connection, request)
                    else:
                        await self._relay(connection, request, request.body, None)
                except Exception as error:  # a bug: the client still gets an answer
                    log.exception("proxy_failed", path=request.path)
                    self._failed(connection, error)
                finally:
                    self.in_flight -= 1
        finally:
            connection.done()

    def refuse(
        self, connection: ClientConnection, request: Request, status: int, message: str = ""
    ) -> None:
        """Refused by specwatch itself (never sent upstream), in OpenAI's error shape, counted."""
        if not message:
            limits = self._settings.limits
            message = (
                f"specwatch: body over {limits.max_request_bytes} bytes"
                if status == 413
                else f"specwatch: body not received in {limits.body_read_timeout_seconds:g} s"
            )
        if request.method == b"POST" and request.path in OBSERVED_PATHS:
            request_id = self._request_id(request)
            self._submit(
                Observation(
                    ts=self._clock(),
                    request_id=request_id,
                    features=self._features(request),
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
        headers, body = openai_error(status, message)
        connection.respond(status, headers, body)

    def _failed(self, connection: ClientConnection, error: Exception) -> None:
        """Answer a request the proxy failed on itself: a 502 when nothing was sent yet, a
        broken stream otherwise (as when the upstream fails); nothing when it was answered."""
        exchange = connection.exchange
        if not isinstance(exchange, Exchange):  # it failed before relaying: answered alike
            if connection.closed:
                return
            exchange = Exchange(connection, self._health, self._max_response, self.budget, False)
        exchange.on_error(error, internal=True)

    def forget(self, connection: ClientConnection) -> None:
        """The connection closed."""
        self._connections.discard(connection)

    def _request_id(self, request: Request) -> str:
        given = wire.header(request.headers, _REQUEST_ID)
        if given:
            return given.decode("latin-1")
        # unique per process: a random prefix drawn once and a counter (uuid4 per request
        # cost a getrandom system call each)
        return f"{self._id_prefix}{next(self._ids):010x}"

    def _ab_key(self, request: Request, request_id: str) -> str:
        key = wire.header(request.headers, self._key_header)
        return key.decode("latin-1") if key else request_id

    def _features(self, request: Request, body: Any = None) -> RequestFeatures:
        task = wire.header(request.headers, self._task_header)
        return features_of(request.path, task.decode("latin-1") if task else None, body)

    async def _relay(
        self,
        connection: ClientConnection,
        request: Request,
        body: bytes,
        exchange: Exchange | None,
        base: str | None = None,
    ) -> Exchange:
        """Send the request upstream and relay the answer; an unobserved exchange by default."""
        pool = self._pools[base or self.router.spec_upstream]
        if exchange is None:
            exchange = Exchange(connection, self._health, self._max_response, self.budget, False)
        connection.exchange = exchange
        try:
            upstream = await pool.acquire()
        except (OSError, TimeoutError) as error:
            exchange.on_error(error, target=base or self.router.spec_upstream)
        else:
            if connection.closed:  # the client left while we connected
                pool.release(upstream)
                exchange.client_gone()
            else:
                exchange.upstream = upstream
                if connection.paused:
                    upstream.pause()
                head = wire.request_head(
                    request.method,
                    request.target,
                    pool.authority,
                    wire.forwardable(request.headers),
                    len(body),
                )
                exchange.sent = time.perf_counter()
                upstream.send(head + body, exchange, head_only=request.method == b"HEAD")
        await exchange.finished
        return exchange

    async def _observed(self, connection: ClientConnection, request: Request) -> None:
        started = time.perf_counter()
        request_id = self._request_id(request)
        variant = self.router.variant(self._ab_key(request, request_id))
        features: RequestFeatures | None = None  # from the body once it is read
        exchange = Exchange(connection, self._health, self._max_response, self.budget, True)
        base = self.router.upstream(variant)
        stream = False
        load = self._load[base] = self._load.get(base, 0) + 1  # the batch it joins, about
        self._health.in_flight[variant] += 1
        try:  # from here on, whatever happens, the request lands in exactly one outcome
            raw = request.body
            body: Any = None
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self._health.parse_error(ParseSource.REQUEST, ParseReason.INVALID_JSON)
            if not isinstance(body, dict):
                body = None
            stream = body is not None and body.get("stream") is True
            openai = request.path not in NATIVE_PATHS  # the native endpoints' streams are their own
            if body is not None and stream and openai and self.engine != LLAMACPP:
                options = body.get("stream_options")
                if not (isinstance(options, dict) and options.get("include_usage") is True):
                    asked = with_usage(raw, body)
                    if asked is None:  # nested past orjson's 254 levels: relayed as sent
                        self._health.parse_error(ParseSource.REQUEST, ParseReason.UNENCODABLE)
                    else:
                        raw, exchange.inject = asked, True
            if body and openai and self.engine == SGLANG and not sglang.wants(body):
                raw, exchange.strip = sglang.asking(raw), True
            features = self._features(request, body)
            shadowed = self.shadow.wanted(body, variant)
            exchange.begin(stream, started, capture=shadowed and stream)
            self._health.proxy_overhead.observe(time.perf_counter() - started)
            await self._relay(connection, request, raw, exchange, base)
            output = exchange.output(stream) if shadowed and exchange.outcome is None else None
            if output:
                assert body is not None
                # The client has its whole answer: the comparison cannot delay it.
                headers = {
                    name.decode("latin-1"): value.decode("latin-1")
                    for name, value in wire.forwardable(request.headers)
                }
                self.shadow.start(request.path, body, headers, output, stream)
        except asyncio.CancelledError:
            exchange.outcome = Outcome.CLIENT_ABORTED
            raise
        except Exception as error:  # a bug: answered (a 502 or a broken stream, counted as
            # upstream_failed) unless it was already, and the request keeps one outcome
            log.exception("proxy_failed", request_id=request_id)
            exchange.on_error(error, internal=True)
        finally:
            self._load[base] -= 1
            self._health.in_flight[variant] -= 1
            if exchange.ended and exchange.done >= exchange.sent > 0.0:  # answered whole
                added = exchange.ended - started - (exchange.done - exchange.sent)
                self._health.added_time(request.path, added)
            held = exchange.settle()
            self._submit(
                Observation(
                    ts=self._clock(),
                    request_id=request_id,
                    features=self._features(request) if features is None else features,
                    outcome=exchange.outcome,
                    stream=stream,
                    payload=exchange.payload,
                    choice_stats=exchange.choice_stats,
                    details_asked=exchange.strip,
                    e2e=time.perf_counter() - started,
                    first_byte=exchange.first_byte,
                    parse_failure=exchange.parse_failure,
                    variant=variant,
                    in_flight=load,
                    held=held,
                    status=exchange.status,
                )
            )
