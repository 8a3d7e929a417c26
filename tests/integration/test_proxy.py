"""The proxy between real HTTP clients and the simulated vLLM, on loopback sockets."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Generator
from typing import Any, TypeVar

import aiohttp
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from specwatch import conventions as C
from specwatch.engines.vllm.response import event_data, is_usage_event
from specwatch.proxy.proxy import _USAGE_OPTION
from specwatch.proxy.sse import SseSplitter
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import assert_status_valid
from tests.support.http import by_label, post, scrape, serve, sidecar_settings, total
from tests.support.workloads import mixed_requests

T = TypeVar("T")


@pytest.fixture
def sim_config() -> SimConfig:
    # Prefill takes 1 ms per prompt token, steps 0.2 ms: a client that gives up after 150 ms on
    # a 600-token prompt leaves during prefill, before vLLM (here, the simulator) runs any step.
    return SimConfig(cost=CostModel(target_step_ms=0.2, prefill_ms_per_token=1.0))


async def test_totals_over_all_slices_equal_the_upstreams_counters_exactly(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    server, _ = sim
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    requests = mixed_requests(seed=1, n=48)
    errors = [
        ({"prompt": "x", "n": 2, "temperature": 0}, {}),  # vLLM: 400
        ({"prompt": "x", "max_tokens": 10**9}, {}),  # 400
        ({"prompt": "x", "model": "no-such-model"}, {}),  # 404
        ({"prompt": "x"}, {"X-Sim-Fail": "500"}),  # 500
    ]
    aborted = [
        ({"prompt": "word " * 600, "stream": stream}, {"X-Task-Type": "code"})
        for stream in (True, False, True)
    ]
    async with aiohttp.ClientSession() as session:
        ok = await asyncio.gather(*(post(session, proxy + p, b, h) for p, b, h in requests))
        failed = [await post(session, proxy + "/v1/completions", b, h) for b, h in errors]
        for body, headers in aborted:
            with pytest.raises(asyncio.TimeoutError):
                async with asyncio.timeout(0.15):
                    await post(session, proxy + "/v1/completions", body, headers)
    assert all(200 == status for status, _ in ok)
    assert [400, 400, 404, 500] == [status for status, _ in failed]
    await asyncio.sleep(0.3)  # let the upstream see the aborts
    await sidecar.drained()
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")

    upstream = {
        "steps": server.metrics.total(C.VLLM_NUM_DRAFTS),
        "drafted": server.metrics.total(C.VLLM_NUM_DRAFT_TOKENS),
        "accepted": server.metrics.total(C.VLLM_NUM_ACCEPTED_TOKENS),
    }
    ours = {
        "steps": total(metrics, C.SPEC_STEPS + "_total"),
        "drafted": total(metrics, C.DRAFT_TOKENS + "_total"),
        "accepted": total(metrics, C.ACCEPTED_TOKENS + "_total"),
    }
    assert upstream["steps"] > 0
    assert upstream == ours
    outcomes = by_label(metrics, C.REQUESTS + "_total", C.Label.OUTCOME)
    assert {
        C.Outcome.OBSERVED: len(requests),
        C.Outcome.UPSTREAM_ERROR: len(errors),
        C.Outcome.CLIENT_ABORTED: len(aborted),
    } == outcomes
    # unknown header values never became labels
    tasks = by_label(metrics, C.REQUESTS + "_total", C.Label.TASK)
    assert "not-a-task" not in tasks
    assert set(tasks) <= {*sidecar.settings.tasks.allowlist, C.OTHER}


def _events(data: bytes) -> list[Any]:
    """Events with the per-request id, timestamp and timings taken out."""
    out = []
    for event in SseSplitter(1 << 20).feed(data):
        payload = event_data(event)
        assert payload is not None
        if payload == b"[DONE]":
            out.append("[DONE]")
            continue
        obj = orjson.loads(payload)
        obj.pop("id")
        obj.pop("created")
        if "metrics" in obj:
            obj["metrics"] = obj["metrics"]["speculative_decoding"]
        out.append(obj)
    return out


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
async def test_a_stream_without_usage_reaches_the_client_as_if_there_were_no_proxy(
    sim: tuple[SimServer, str], sidecar: Sidecar, path: str
) -> None:
    _, direct = sim
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    key = "prompt" if path == "/v1/completions" else "messages"
    prompt: Any = "def add(a, b): return a + b"
    if key == "messages":
        prompt = [{"role": "user", "content": prompt}]
    body = {key: prompt, "max_tokens": 48, "temperature": 0, "stream": True}
    async with aiohttp.ClientSession() as session:
        _, upstream_bytes = await post(session, direct + path, body)
        status, proxied_bytes = await post(session, proxy + path, body)
    assert 200 == status
    assert not any(is_usage_event(e) for e in SseSplitter(1 << 20).feed(proxied_bytes))
    assert _events(upstream_bytes) == _events(proxied_bytes)
    await sidecar.drained()
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")
    assert 1 == total(metrics, C.REQUESTS + "_total", outcome=C.Outcome.OBSERVED)


async def test_a_client_that_asked_for_usage_gets_the_upstream_bytes_unchanged(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    _, direct = sim
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    body = {"prompt": "x y z", "max_tokens": 20, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    headers = {"X-Request-Id": "fixed-id"}
    async with aiohttp.ClientSession() as session:
        _, upstream_bytes = await post(session, direct + "/v1/completions", body, headers)
        _, proxied_bytes = await post(session, proxy + "/v1/completions", body, headers)
    assert _events(upstream_bytes) == _events(proxied_bytes)
    assert b"fixed-id" in proxied_bytes


async def test_other_paths_pass_through_unchanged(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    _, direct = sim
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    async with aiohttp.ClientSession() as session:
        for path in ("/v1/models", "/health"):
            async with session.get(direct + path) as a, session.get(proxy + path) as b:
                assert (a.status, await a.read()) == (b.status, await b.read())
        async with session.get(proxy + "/metrics") as response:
            assert C.VLLM_NUM_DRAFTS in await response.text()
        async with session.get(proxy + "/no/such/path") as response:
            assert 404 == response.status
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")
    assert 4 == total(metrics, C.PASSTHROUGH_REQUESTS + "_total")


async def test_an_unreachable_upstream_gives_a_502_in_openais_error_shape() -> None:
    # discard port: nothing listens, so the analysis waits out the version (1 s, not 120)
    car = Sidecar(sidecar_settings("http://127.0.0.1:9", limits={"version_wait_seconds": 1.0}))
    await car.start()
    try:
        async with aiohttp.ClientSession() as session:
            status, data = await post(
                session, f"http://127.0.0.1:{car.ports.proxy}/v1/completions", {"prompt": "hi"}
            )
        assert 502 == status
        error = orjson.loads(data)["error"]
        assert {"message", "type", "param", "code"} == set(error)
        assert 502 == error["code"]
        # in words, with the address: not a Python repr
        assert "upstream http://127.0.0.1:9 failed: Connect call failed" in error["message"] or (
            "upstream http://127.0.0.1:9 failed: Connection refused" in error["message"]
        ), error["message"]
        assert "Error(" not in error["message"]
        await car.drained()
        metrics = await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics")
        assert 1 == total(metrics, C.REQUESTS + "_total", outcome=C.Outcome.UPSTREAM_FAILED)
    finally:
        await car.stop()


async def test_an_upstream_cut_mid_stream_gives_the_client_an_error_event(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    body = {"prompt": "a b c", "max_tokens": 60, "temperature": 0, "stream": True}
    async with aiohttp.ClientSession() as session:
        async with session.post(
            proxy + "/v1/completions", json=body, headers={"X-Sim-Fail": "cut"}
        ) as response:
            assert 200 == response.status
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()
        # the proxy still serves
        status, _ = await post(session, proxy + "/v1/completions", {"prompt": "ok"})
        assert 200 == status
    await sidecar.drained()
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")
    outcomes = by_label(metrics, C.REQUESTS + "_total", C.Label.OUTCOME)
    assert {C.Outcome.UPSTREAM_FAILED: 1, C.Outcome.OBSERVED: 1} == outcomes


async def test_status_reports_window_and_since_start_counts(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    admin = f"http://127.0.0.1:{sidecar.ports.admin}"
    async with aiohttp.ClientSession() as session:
        for i in range(5):
            await post(session, proxy + "/v1/completions", {"prompt": f"p{i}", "max_tokens": 32},
                       {"X-Task-Type": "code"})  # fmt: skip
        await sidecar.drained()
        async with session.get(admin + "/status") as response:
            status = await response.json()
        async with session.get(admin + "/healthz") as response:
            assert 200 == response.status
    (code,) = [s for s in status["slices"] if s["task"] == "code"]
    assert_status_valid(status)
    assert 5 == code["requests"] == code["since_start"]["requests"]
    assert code["spec_steps"] == code["since_start"]["spec_steps"] > 0
    assert {"estimate", "lower", "upper", "design_effect"} == set(code["alpha"])
    assert C.Zone.INSUFFICIENT == code["zone"]  # 5 requests are below the gate
    assert {"model", "ctx_bucket", "task"} <= set(code)
    assert 1 == len(status["models"])
    assert "all" == status["models"][0]["ctx_bucket"]


@pytest.fixture
async def broken_upstream() -> AsyncIterator[tuple[dict[str, Any], str]]:
    """An upstream that answers whatever the test puts in `state`."""
    from aiohttp import web

    state: dict[str, Any] = {"body": b"", "content_type": "application/json"}

    async def handler(request: web.Request) -> web.Response:
        state["received"] = await request.read()
        return web.Response(body=state["body"], headers={"Content-Type": state["content_type"]})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner, url = await serve(app)
    yield state, url
    await runner.cleanup()


@pytest.fixture
async def broken_sidecar(
    broken_upstream: tuple[dict[str, Any], str],
) -> AsyncIterator[Sidecar]:
    car = Sidecar(sidecar_settings(broken_upstream[1]))
    await car.start()
    yield car
    await car.stop()


_VALID_USAGE = (
    b'data: {"id":"x","object":"text_completion","created":1,"model":"m","choices":[],'
    b'"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2},'
    b'"metrics":{"speculative_decoding":{"num_spec_tokens":2,'
    b'"per_step_drafted":[2],"per_step_accepted":[1]}}}\n\n'
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.one_of(
        st.binary(max_size=600),
        st.sampled_from([b'{"usage": {"prompt_tokens": 3', b"{}", b"[1, 2]", b'{"metrics": 7}']),
    ),
    stream=st.booleans(),
)
async def test_whatever_the_upstream_sends_the_client_gets_it_and_failures_are_counted(
    broken_upstream: tuple[dict[str, Any], str], broken_sidecar: Sidecar, body: bytes, stream: bool
) -> None:
    state, _ = broken_upstream
    state["body"] = body
    state["content_type"] = "text/event-stream" if stream else "application/json"
    proxy = f"http://127.0.0.1:{broken_sidecar.ports.proxy}"
    before = broken_sidecar.read()
    before_snapshot, before_health = before.snapshot, before.health
    assert before_health is not None
    async with aiohttp.ClientSession() as session:
        request = {"prompt": "hi", "stream": stream}
        if stream:  # asked for usage: nothing is stripped, the bytes must be identical
            request["stream_options"] = {"include_usage": True}
        status, received = await post(session, proxy + "/v1/completions", request)
    assert (200, body) == (status, received)
    await broken_sidecar.drained()
    reading = broken_sidecar.read()
    snapshot, health = reading.snapshot, reading.health
    assert health is not None
    assert 0 == health.internal_errors
    new = {
        key: n - before_snapshot.requests.get(key, 0)
        for key, n in snapshot.requests.items()
        if n != before_snapshot.requests.get(key, 0)
    }
    ((_key, outcome),) = new  # exactly one outcome for this one request
    assert outcome in set(C.Outcome)
    if outcome == C.Outcome.PARSE_ERROR:
        assert sum(health.parse_errors.values()) > sum(before_health.parse_errors.values())


@pytest.mark.parametrize("options", [False, True])
async def test_a_request_too_deep_to_encode_is_relayed_and_counted(
    broken_upstream: tuple[dict[str, Any], str], broken_sidecar: Sidecar, options: bool
) -> None:
    """A streaming request nested past orjson's 254 levels: without `stream_options` the
    option is written into its bytes, as for any body; with them (so the body must be encoded
    again, which orjson refuses that deep) it goes upstream byte for byte, the reason counted.
    (The encoding error used to leave the request unsent and the client waiting.)"""
    state, _ = broken_upstream
    state["body"], state["content_type"] = _VALID_USAGE, "text/event-stream"
    given = b', "stream_options": {}' if options else b""
    raw = b'{"prompt": "hi", "stream": true' + given + b', "x": ' + b"[" * 300 + b"]" * 300 + b"}"
    proxy = f"http://127.0.0.1:{broken_sidecar.ports.proxy}"
    headers = {"Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(proxy + "/v1/completions", data=raw, headers=headers) as response,
    ):
        assert 200 == response.status
        answer = await response.read()
    await broken_sidecar.drained()
    reading = broken_sidecar.read()
    assert reading.health is not None
    unencodable = reading.health.parse_errors.get(
        (C.ParseSource.REQUEST, C.ParseReason.UNENCODABLE), 0
    )
    if options:
        assert (raw, _VALID_USAGE, 1) == (state["received"], answer, unencodable)
    else:  # the usage the proxy asked for is the proxy's: the client did not ask for it
        assert (b"{" + _USAGE_OPTION + raw[1:], b"", 0) == (state["received"], answer, unencodable)
        assert {C.Outcome.OBSERVED} == {outcome for _, outcome in reading.snapshot.requests}
    assert 1 == sum(reading.snapshot.requests.values())


async def test_a_broken_sse_stream_with_a_readable_usage_chunk_is_still_observed(
    broken_upstream: tuple[dict[str, Any], str], broken_sidecar: Sidecar
) -> None:
    state, _ = broken_upstream
    state["content_type"] = "text/event-stream"
    state["body"] = b'data: {"choices": [{"text": "a"}]}\n\n' + _VALID_USAGE + b"data: [DO"
    async with aiohttp.ClientSession() as session:
        status, received = await post(
            session, f"http://127.0.0.1:{broken_sidecar.ports.proxy}/v1/completions",
            {"prompt": "hi", "stream": True},
        )  # fmt: skip
    assert 200 == status
    assert b'data: {"choices": [{"text": "a"}]}\n\ndata: [DO' == received  # usage stripped
    await broken_sidecar.drained()
    reading = broken_sidecar.read()
    snapshot, health = reading.snapshot, reading.health
    assert health is not None
    stream_errors = {k: n for k, n in health.parse_errors.items() if k[0] == "sse"}
    assert {("sse", "truncated_stream"): 1} == stream_errors
    assert [C.Outcome.OBSERVED] == [outcome for (_key, outcome) in snapshot.requests]
    assert 1 == sum(view.since_start.steps for view in snapshot.slices)


async def test_every_observed_request_carries_the_load_it_met(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    """in_flight: the observed requests in flight at its upstream as it started, itself too."""
    seen: list[int | None] = []
    ingest = sidecar.analyzer.ingest

    def spy(record: Any) -> None:
        seen.append(record.in_flight)
        ingest(record)

    sidecar.analyzer.ingest = spy  # type: ignore[method-assign]
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}/v1/completions"
    async with aiohttp.ClientSession() as session:
        await post(session, proxy, {"prompt": "x", "max_tokens": 4}, {})  # alone
        await sidecar.drained()
        crowd = {"prompt": "word " * 80, "max_tokens": 40}  # 80 ms of prefill each: overlap
        await asyncio.gather(*(post(session, proxy, crowd, {}) for _ in range(8)))
        await post(session, proxy, {"prompt": "x", "max_tokens": 4}, {})  # alone again
    await sidecar.drained()
    assert 1 == seen[0]
    assert 1 == seen[-1]  # every request that left was counted out
    crowd_loads = [n for n in seen[1:-1] if n is not None]
    assert 8 == len(crowd_loads)
    assert max(crowd_loads) >= 4
    assert all(1 <= n <= 8 for n in crowd_loads)
    # /status gives the K table by batch size, from 1 to the largest load seen
    status = await sidecar_status(sidecar)
    assert_status_valid(status)
    (table,) = status["load"].values()
    schedule = table["num_speculative_tokens_per_batch_size"]
    assert 1 == schedule[0][0]
    assert max(crowd_loads) == schedule[-1][1]


async def sidecar_status(sidecar: Sidecar) -> Any:
    async with aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{sidecar.ports.admin}/status"
        async with session.get(url) as response:
            return await response.json()


@pytest.mark.parametrize("where", ["observed", "relay"])
async def test_a_failure_inside_the_proxy_answers_502_and_serves_the_next_request(
    sim: tuple[SimServer, str], sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A bug in the proxy's own code (here made to raise) costs that request a 502 in OpenAI's
    shape at once, not a client left waiting; the observed request keeps one outcome, and the
    next request is served."""

    def boom(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("boom")

    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    body = {"prompt": "x y z", "max_tokens": 8, "stream": True}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        with monkeypatch.context() as patched:
            if where == "observed":
                patched.setattr(sidecar.proxy.shadow, "wanted", boom)
                status, answer = await post(session, proxy + "/v1/completions", body)
            else:
                patched.setattr("specwatch.proxy.wire.request_head", boom)
                async with session.get(proxy + "/v1/models") as response:
                    status, answer = response.status, await response.read()
        assert 502 == status
        assert b"internal error" in orjson.loads(answer)["error"]["message"].encode()
        assert 200 == (await post(session, proxy + "/v1/completions", body))[0]
    await sidecar.drained()
    outcomes = sidecar.read().snapshot.requests
    expected = (
        {C.Outcome.UPSTREAM_FAILED, C.Outcome.OBSERVED}
        if where == "observed"
        else {C.Outcome.OBSERVED}
    )
    assert expected == {outcome for (_key, outcome) in outcomes}


class Held:
    """Work in steps held after its first step until a proxied request has been answered."""

    def __init__(self) -> None:
        self.answered = asyncio.Event()
        self.entered = asyncio.Event()

    def holding(self, steps: Generator[None, None, T]) -> Generator[None, None, T]:
        yield  # a step, then held until the request was answered
        self.entered.set()
        deadline = time.monotonic() + 10.0
        while not self.answered.is_set():
            assert time.monotonic() < deadline, "nothing was relayed while the work was held"
            yield
        return (yield from steps)


@pytest.mark.parametrize("held", ["reading", "writing"])
async def test_requests_are_relayed_while_a_scrape_is_under_way(
    sim: tuple[SimServer, str], sidecar: Sidecar, held: str
) -> None:
    """/metrics runs on the event loop in steps, the loop relaying requests in between: here
    the scrape is held between two steps of its reading, or of its writing, until a proxied
    request has been answered (taken in one go, the request would wait for the scrape and the
    scrape for the request: a 500 after 10 s). The reading is of one moment: the request
    answered meanwhile waits to be counted until it is done (counting it in between would
    mix two moments: the analysis refuses that, a 500), and the next reading counts it."""
    hold = Held()
    holding, answered, entered = hold.holding, hold.answered, hold.entered
    analyzer, exposition = sidecar.analyzer, sidecar.exposition
    if held == "reading":
        take = analyzer.snapshot_in_turns
        analyzer.snapshot_in_turns = lambda now, step=0.001: holding(take(now, step))  # type: ignore[method-assign]
    else:
        render = exposition.render_in_turns
        exposition.render_in_turns = lambda reading: holding(render(reading))  # type: ignore[method-assign]
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}/v1/completions"
    async with aiohttp.ClientSession() as session:
        assert 200 == (await post(session, proxy, {"prompt": "before"}))[0]
        await sidecar.drained()
        scraping = asyncio.create_task(scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics"))
        async with asyncio.timeout(10):
            await entered.wait()
        status, _ = await post(session, proxy, {"prompt": "meanwhile"})
    answered.set()
    assert 200 == status
    metrics = await scraping
    assert 1 == total(metrics, C.REQUESTS + "_total")  # the reading came before it
    await sidecar.drained()
    assert 2 == sum(sidecar.read().snapshot.requests.values())
    assert total(metrics, C.ASYNCIO_TASKS) > 0


async def test_requests_are_relayed_while_an_evaluation_is_under_way(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    """An evaluation runs on the loop in steps through the reading's gate: held between two
    steps until a proxied request has been answered, it ends without error (an ingestion
    between its steps would mix two moments: it raises) and the request is counted after."""
    hold = Held()
    evaluate = sidecar.analyzer.evaluate_in_turns
    sidecar.analyzer.evaluate_in_turns = lambda now, step=0.001: hold.holding(evaluate(now, step))  # type: ignore[method-assign]
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}/v1/completions"
    async with aiohttp.ClientSession() as session:
        assert 200 == (await post(session, proxy, {"prompt": "before"}))[0]
        await sidecar.drained()
        evaluating = asyncio.create_task(sidecar.evaluate_now())
        async with asyncio.timeout(10):
            await hold.entered.wait()
        status, _ = await post(session, proxy, {"prompt": "meanwhile"})
    hold.answered.set()
    assert 200 == status
    async with asyncio.timeout(10):
        await evaluating
    await sidecar.drained()
    assert 2 == sum(sidecar.read().snapshot.requests.values())
    assert 0 == sidecar.health.internal_errors


async def test_metrics_go_out_in_pieces_that_make_the_whole_body(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    """The /metrics body is written piece by piece (never joined): every piece arrives, under
    the length announced, and the exposition reads whole, the process metrics last."""
    sidecar.exposition.PIECE_BYTES = 2048
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}/v1/completions"
    async with aiohttp.ClientSession() as session:
        for i in range(6):
            body = {"prompt": "p" * (50 + 400 * i), "stream": i % 2 == 0}
            assert 200 == (await post(session, proxy, body, {"X-Task-Type": "code"}))[0]
        await sidecar.drained()
        async with (
            asyncio.timeout(10),
            session.get(f"http://127.0.0.1:{sidecar.ports.admin}/metrics") as response,
        ):
            assert 200 == response.status
            text = await response.read()
            assert int(response.headers["Content-Length"]) == len(text)
    assert len(text) > 10 * 2048
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")
    assert 6 == total(metrics, C.REQUESTS + "_total")
    assert text.rstrip().splitlines()[-1].startswith(b"process_")


async def _raw(port: int, version: bytes, body: bytes) -> tuple[bytes, bytes]:
    """One request on a bare socket, read until the proxy closes (at most 10 s): head, body.
    HTTP/1.1 asks for the close; 1.0 closes by default."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    close = b"Connection: close\r\n" if version == b"1.1" else b""
    writer.write(
        b"POST /v1/completions HTTP/%s\r\nHost: x\r\n%sContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (version, close, len(body), body)
    )
    received = await asyncio.wait_for(reader.read(-1), 10)
    writer.close()
    head, _, rest = received.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


async def test_an_http10_client_gets_its_stream_unframed_and_closed(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    """RFC 9112 forbids chunked framing to an HTTP/1.0 client; like nginx, the body goes as it
    comes and the close ends it. An HTTP/1.1 client still gets chunks."""
    _, direct = sim
    body = {"prompt": "def add(a, b):", "max_tokens": 24, "temperature": 0, "stream": True}
    async with aiohttp.ClientSession() as session:
        _, upstream_bytes = await post(session, direct + "/v1/completions", body)
    head, stream = await _raw(sidecar.ports.proxy, b"1.0", orjson.dumps(body))
    lowered = head.lower()
    assert lowered.startswith(b"http/1.1 200 ")
    assert b"transfer-encoding" not in lowered
    assert b"connection: close" in lowered
    assert _events(upstream_bytes) == _events(stream)
    head11, chunked = await _raw(sidecar.ports.proxy, b"1.1", orjson.dumps(body))
    assert b"transfer-encoding: chunked" in head11.lower()
    assert chunked.endswith(b"\r\n0\r\n\r\n")
    await sidecar.drained()
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")
    assert 2 == total(metrics, C.REQUESTS + "_total", outcome=C.Outcome.OBSERVED)


async def test_the_admin_ports_404s_say_what_is_there_and_what_to_configure(
    sidecar: Sidecar,
) -> None:
    """A/B is off here: its admin routes are named with the setting that turns them on."""
    admin = f"http://127.0.0.1:{sidecar.ports.admin}"
    async with aiohttp.ClientSession() as session:
        for path in ("/admin/ab", "/admin/rollback"):
            async with session.get(admin + path) as response:
                assert 404 == response.status
                error = (await response.json())["error"]
            assert error.startswith(f"{path} exists when A/B is on: set ab.baseline_upstream")
        async with session.get(admin + "/metric") as response:
            assert 404 == response.status
            error = (await response.json())["error"]
        assert "no /metric on the admin port; it serves /metrics, /status" in error
        async with session.post(admin + "/metrics") as response:
            assert 405 == response.status
