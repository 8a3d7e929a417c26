"""Limits and shutdown: oversized and slow requests, the concurrency cap, draining on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import aiohttp
import orjson
import pytest
from aiohttp import web
from specwatch import conventions as C
from specwatch.proxy.budget import Held
from specwatch.proxy.observation import Observation
from specwatch.proxy.tasks import features_of
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import CAPTURES, assert_status_valid
from tests.support.http import (
    by_label,
    eventually,
    post,
    scrape,
    serve,
    sidecar_settings,
    total,
)

SLOW_STREAM = {"prompt": "x", "max_tokens": 150, "stream": True}  # ~3 s at 20 ms a step


@pytest.fixture
def sim_config() -> SimConfig:
    return SimConfig(cost=CostModel(target_step_ms=20.0, prefill_ms_per_token=0.0))


@pytest.fixture
async def limited(sim: tuple[SimServer, str]) -> AsyncIterator[Sidecar]:
    car = Sidecar(
        sidecar_settings(
            sim[1],
            limits={
                "max_request_bytes": 2048,
                "max_concurrent_requests": 2,
                "body_read_timeout_seconds": 0.5,
                "header_read_timeout_seconds": 0.5,
            },
        )
    )
    await car.start()
    yield car
    await car.stop()


def error_of(data: bytes) -> dict[str, object]:
    error = orjson.loads(data)["error"]
    assert {"message", "type", "param", "code"} == set(error)
    return dict(error)


async def counted(car: Sidecar, counter: str, label: str) -> dict[str, float]:
    """A counter family by one label, once everything submitted has been analysed."""
    await car.drained()
    return by_label(await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics"), counter, label)


async def outcomes(car: Sidecar) -> dict[str, float]:
    return await counted(car, C.REQUESTS + "_total", C.Label.OUTCOME)


async def parse_errors(car: Sidecar) -> dict[str, float]:
    return await counted(car, C.PARSE_ERRORS + "_total", C.Label.REASON)


async def test_an_oversized_body_gets_a_413_in_openais_shape(limited: Sidecar) -> None:
    async with aiohttp.ClientSession() as session:
        status, data = await post(
            session, f"http://127.0.0.1:{limited.ports.proxy}/v1/completions",
            {"prompt": "x" * 5000},
        )  # fmt: skip
    assert 413 == status
    assert 413 == error_of(data)["code"]
    assert {C.Outcome.REJECTED: 1} == await outcomes(limited)


async def test_a_client_that_sends_its_body_too_slowly_gets_a_408(limited: Sidecar) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", limited.ports.proxy)
    writer.write(
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), timeout=5)
    writer.close()
    assert b" 408 " in status_line
    assert {C.Outcome.REJECTED: 1} == await outcomes(limited)


async def test_a_client_that_sends_its_headers_too_slowly_is_disconnected(
    limited: Sidecar,
) -> None:
    """Slowloris: a header line every 0.2 s never completes a request; the connection is
    closed after the header read timeout (0.5 s here), and the proxy keeps serving."""
    reader, writer = await asyncio.open_connection("127.0.0.1", limited.ports.proxy)
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
    loop = asyncio.get_running_loop()
    started = loop.time()
    closed_after = None
    for i in range(40):  # up to 8 s of dribbling
        await asyncio.sleep(0.2)
        if reader.at_eof():
            closed_after = loop.time() - started
            break
        try:
            writer.write(f"X-Slow-{i}: y\r\n".encode())
            await writer.drain()
        except ConnectionError:
            closed_after = loop.time() - started
            break
        with contextlib.suppress(TimeoutError):
            if await asyncio.wait_for(reader.read(1), timeout=0.01) == b"":
                closed_after = loop.time() - started
                break
    writer.close()
    assert closed_after is not None, "the slow client was never disconnected"
    async with aiohttp.ClientSession() as session:  # the proxy still serves
        status, _ = await post(
            session, f"http://127.0.0.1:{limited.ports.proxy}/v1/completions", {"prompt": "x"}
        )
    assert 200 == status


async def test_past_the_concurrency_cap_a_clear_503_with_retry_after(limited: Sidecar) -> None:
    proxy = f"http://127.0.0.1:{limited.ports.proxy}/v1/completions"
    async with aiohttp.ClientSession() as session:
        streams = [asyncio.create_task(post(session, proxy, SLOW_STREAM)) for _ in range(2)]
        await eventually(lambda: limited.proxy.in_flight == 2)
        async with session.post(proxy, json={"prompt": "y"}) as response:
            assert (503, "1") == (response.status, response.headers.get("Retry-After"))
            assert "in flight" in str(error_of(await response.read())["message"])
        assert [200, 200] == [status for status, _ in await asyncio.gather(*streams)]
    assert {C.Outcome.OBSERVED: 2, C.Outcome.REJECTED: 1} == await outcomes(limited)


async def test_draining_finishes_streams_in_flight_and_refuses_new_ones(
    sim: tuple[SimServer, str],
) -> None:
    car = Sidecar(sidecar_settings(sim[1]))
    await car.start()
    proxy = f"http://127.0.0.1:{car.ports.proxy}/v1/completions"
    admin = f"http://127.0.0.1:{car.ports.admin}"
    try:
        async with aiohttp.ClientSession() as session:
            streams = [asyncio.create_task(post(session, proxy, SLOW_STREAM)) for _ in range(3)]
            await eventually(lambda: car.proxy.in_flight == 3)
            drain = asyncio.create_task(car.drain(20.0))
            await eventually(lambda: car.proxy.draining)
            status, data = await post(session, proxy, {"prompt": "late"})
            assert 503 == status
            assert "shutting down" in str(error_of(data)["message"])
            async with session.get(admin + "/readyz") as response:
                assert 503 == response.status
            results = await asyncio.gather(*streams)
            await drain
        assert all(200 == s and data.rstrip().endswith(b"data: [DONE]") for s, data in results)
        assert {C.Outcome.OBSERVED: 3, C.Outcome.REJECTED: 1} == await outcomes(car)
    finally:
        await car.stop()


# --- what is held of responses to read them (proxy/budget.py) -------------------------------

PIECE = 3000  # bytes of an upstream body piece; bodies are two pieces


@contextlib.asynccontextmanager
async def gated(
    body_for: Callable[[str], bytes], first: int, kind: str, sized: bool
) -> AsyncIterator[tuple[str, asyncio.Event, list[str]]]:
    """An upstream whose answer to a prompt goes out in two writes: its `first` bytes at once,
    the rest once `gate` is set. `arrived` lists the prompts whose first write went out."""
    gate, arrived = asyncio.Event(), []

    async def handler(request: web.Request) -> web.StreamResponse:
        prompt = (await request.json())["prompt"]
        body = body_for(prompt)
        response = web.StreamResponse(headers={"Content-Type": kind})
        if sized:
            response.content_length = len(body)
        await response.prepare(request)
        await response.write(body[:first])
        arrived.append(prompt)
        await gate.wait()
        await response.write(body[first:])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    runner, url = await serve(app)
    try:
        yield url, gate, arrived
    finally:
        await runner.cleanup()


@pytest.fixture
async def gated_upstream() -> AsyncIterator[tuple[str, asyncio.Event, list[str]]]:
    """JSON bodies of 2 x PIECE bytes: the first piece at once, the second once `gate` is set."""

    def body_for(prompt: str) -> bytes:
        body = orjson.dumps({"id": prompt, "model": "m", "pad": "x" * (2 * PIECE - 40)})
        return body[:-2] + b" " * (2 * PIECE - len(body)) + body[-2:]  # exactly 2 x PIECE

    async with gated(body_for, PIECE, "application/json", sized=True) as served:
        yield served


@contextlib.asynccontextmanager
async def running(url: str, **limits: int) -> AsyncIterator[tuple[Sidecar, str]]:
    """A started Sidecar in front of `url` with these limits, and its proxy's completions URL."""
    car = Sidecar(sidecar_settings(url, limits=limits))
    await car.start()
    try:
        yield car, f"http://127.0.0.1:{car.ports.proxy}/v1/completions"
    finally:
        await car.stop()


async def held_gauges(car: Sidecar) -> tuple[float, float]:
    """The byte budget as /metrics shows it; /status (valid against its schema) agrees."""
    admin = f"http://127.0.0.1:{car.ports.admin}"
    metrics = await scrape(admin + "/metrics")
    gauges = total(metrics, C.HELD_RESPONSE_BYTES), total(metrics, C.HELD_RESPONSE_LIMIT_BYTES)
    async with aiohttp.ClientSession() as session, session.get(admin + "/status") as response:
        status = await response.json()
    assert_status_valid(status)
    assert gauges == (status["health"]["held_bytes"], status["health"]["held_limit_bytes"])
    return gauges


async def test_bodies_past_the_byte_budget_are_relayed_whole_and_counted_unread(
    gated_upstream: tuple[str, asyncio.Event, list[str]],
) -> None:
    """Two bodies of 6,000 bytes each under a budget of 8,192: both are held while their first
    halves arrive, the second half of one finds no room. That one is not read (and its held
    half let go at once); both clients get every byte; nothing is held after."""
    url, gate, arrived = gated_upstream
    async with running(url, max_response_bytes=8192, max_observed_bytes=8192) as (car, proxy):
        async with aiohttp.ClientSession() as session:
            both = [asyncio.create_task(post(session, proxy, {"prompt": p})) for p in "ab"]
            await eventually(lambda: len(arrived) == 2 and car.proxy.budget.held == 2 * PIECE)
            assert (2 * PIECE, 8192) == await held_gauges(car)  # what an operator sees
            gate.set()
            results = await asyncio.gather(*both)
        assert [(200, 2 * PIECE)] * 2 == [(status, len(data)) for status, data in results]
        assert [b"a", b"b"] == [orjson.loads(data)["id"].encode() for _, data in results]
        assert {C.ParseReason.MEMORY_BUDGET: 1} == await parse_errors(car)
        assert {C.Outcome.PARSE_ERROR: 1, C.Outcome.NO_SPEC_METRICS: 1} == await outcomes(car)
        assert (0, 8192) == await held_gauges(car)


async def test_a_body_past_the_response_limit_is_relayed_whole_and_counted_unread(
    gated_upstream: tuple[str, asyncio.Event, list[str]],
) -> None:
    url, gate, _ = gated_upstream
    gate.set()
    async with running(url, max_response_bytes=4096) as (car, proxy):
        async with aiohttp.ClientSession() as session:
            status, data = await post(session, proxy, {"prompt": "a"})
        assert (200, 2 * PIECE, "a") == (status, len(data), orjson.loads(data)["id"])
        assert {C.ParseReason.RESPONSE_TOO_LARGE: 1} == await parse_errors(car)
        assert {C.Outcome.PARSE_ERROR: 1} == await outcomes(car)
        assert 0 == car.proxy.budget.held


PARTIAL = 900  # bytes of an SSE event sent before the gate; the event is 1,000


@pytest.fixture
async def gated_stream() -> AsyncIterator[tuple[str, asyncio.Event, list[str], bytes]]:
    """vLLM's captured stream after a 1,000-byte event (an SSE comment) of which PARTIAL bytes
    go out at once, the rest once `gate` is set."""
    body = b": " + b"x" * 996 + b"\n\n" + (CAPTURES / "stream_usage.sse").read_bytes()
    async with gated(lambda _: body, PARTIAL, "text/event-stream", sized=False) as served:
        yield (*served, body)


STREAM_WITH_USAGE = {"stream": True, "stream_options": {"include_usage": True}}


async def test_a_partial_sse_event_holds_the_budget_and_past_it_is_passed_on(
    gated_stream: tuple[str, asyncio.Event, list[str], bytes],
) -> None:
    """Two streams each stop in the middle of an event, 900 bytes of it arrived, under a
    budget of 1,500: one partial event is held (and shown), the other finds no room and is
    passed on unheld. Both clients get every byte, both requests are read from their usage
    event, the one counted `memory_budget`; nothing is held after."""
    url, gate, arrived, body = gated_stream
    async with running(url, max_response_bytes=1024, max_observed_bytes=1500) as (car, proxy):
        async with aiohttp.ClientSession() as session:
            both = [
                asyncio.create_task(post(session, proxy, {"prompt": p, **STREAM_WITH_USAGE}))
                for p in "ab"
            ]
            await eventually(lambda: len(arrived) == 2)
            await eventually(lambda: car.proxy.budget.held == PARTIAL)
            assert (PARTIAL, 1500) == await held_gauges(car)
            gate.set()
            results = await asyncio.gather(*both)
        assert [(200, body)] * 2 == results
        assert {C.ParseReason.MEMORY_BUDGET: 1} == await parse_errors(car)
        assert {C.Outcome.OBSERVED: 2} == await outcomes(car)
        assert (0, 1500) == await held_gauges(car)


async def test_a_partial_sse_event_is_let_go_when_the_client_leaves(
    gated_stream: tuple[str, asyncio.Event, list[str], bytes],
) -> None:
    url, _, arrived, _ = gated_stream
    async with running(url) as (car, proxy):
        async with aiohttp.ClientSession() as session:
            request = asyncio.create_task(post(session, proxy, {"prompt": "a", "stream": True}))
            await eventually(lambda: car.proxy.budget.held == PARTIAL)
            request.cancel()  # the client leaves in the middle of the event
            with contextlib.suppress(asyncio.CancelledError):
                await request
        await eventually(lambda: car.proxy.budget.held == 0)
        assert {C.Outcome.CLIENT_ABORTED: 1} == await outcomes(car)
        assert 1 == len(arrived)


async def test_payloads_waiting_for_the_analysis_hold_the_budget_until_it_reads_them() -> None:
    """The queue's share of the budget: held from the proxy's hand-over until the analysis
    takes the observation, and given back when the queue is full and it is dropped."""
    car = Sidecar(sidecar_settings("http://127.0.0.1:9", limits={"analysis_queue": 1}))
    budget = car.proxy.budget
    observations = []
    for i in range(2):
        payload = orjson.dumps({"id": str(i), "model": "m"})
        held = Held(budget)
        assert held.take(len(payload))  # what Exchange.settle hands over
        observations.append(Observation(
            ts=1.0, request_id=str(i), features=features_of("/v1/completions", None, None),
            outcome=None, stream=False, payload=payload, e2e=0.1, first_byte=0.01, held=held,
        ))  # fmt: skip
        car.intake.submit(observations[-1])
    assert (1, len(observations[0].payload or b"")) == (car.health.dropped, budget.held)
    car.intake.ingest(observations[0])
    assert 0 == budget.held
    assert budget.take(budget.limit)  # up to the limit itself, not a byte past it
    assert not budget.take(1)
