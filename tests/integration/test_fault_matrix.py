"""The fault matrix: every upstream fault the simulator can inject, against every way a client
can behave, streaming and not. After each cell: the client got a clean result or a clean error,
the sidecar still serves a normal request, and at the end of each fault's run every request is
in exactly one outcome, specwatch's step count equals the steps of the responses whose metrics
reached the proxy (`SimServer.reported_steps`), and no file descriptor or task is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import psutil
import pytest
from specwatch import conventions as C
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support.http import (
    Samples,
    by_label,
    eventually,
    scrape,
    serve,
    sidecar_settings,
    total,
)

FAULTS = ("none", "500", "cut", "truncate", "bad-json", "html", "slow")
CLIENTS = ("reads_all", "leaves_before_headers", "leaves_mid_body", "leaves_after_last_chunk")


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[SimServer, str]]:
    # 40 ms of prefill (a client can leave before any header), 3 ms steps (and mid-body).
    server = SimServer(SimConfig(cost=CostModel(target_step_ms=3.0, prefill_ms_per_token=4.0)))
    runner, url = await serve(server.app())
    yield server, url
    await runner.cleanup()


def resources() -> tuple[int, int]:
    return psutil.Process().num_fds(), len(asyncio.all_tasks())


async def one(
    session: aiohttp.ClientSession,
    proxy: str,
    fault: str,
    client: str,
    stream: bool,
    server: SimServer | None = None,
) -> tuple[int | None, bytes]:
    """One request as `client` behaves; (status or None if it left before headers, body)."""
    body = {"prompt": "w " * 10, "max_tokens": 40, "stream": stream}
    headers = {} if fault == "none" else {"X-Sim-Fail": fault}
    if client == "leaves_before_headers":
        assert server is not None
        arrived = server.received
        posted = asyncio.ensure_future(session.post(proxy, json=body, headers=headers))
        # leave once the request has reached the upstream (40 ms of prefill: no header yet),
        # not after a fixed time: on a busy machine it may not have left this client by then,
        # and the sidecar would never have seen the request this test counts as sent
        await eventually(lambda: server.received > arrived or posted.done(), seconds=60)
        posted.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
            (await posted).release()
        return None, b""
    async with session.post(proxy, json=body, headers=headers) as response:
        data = b""
        try:
            if client == "leaves_mid_body":
                data = await response.content.read(60)
            elif client == "leaves_after_last_chunk" and stream:
                async for line in response.content:
                    data += line
                    if b'"finish_reason":"length"' in line:
                        break
            else:
                data = await response.read()
        except aiohttp.ClientPayloadError:  # the upstream broke off: the proxy closed on us
            return response.status, b"<broken>"
        response.close()
        return response.status, data


def check_client_view(
    fault: str, client: str, stream: bool, status: int | None, data: bytes
) -> None:
    """What a client that read everything must have got: a result, or a clean error."""
    if client != "reads_all":
        return
    if fault in ("none", "slow"):
        assert 200 == status
        if stream:
            assert data.rstrip().endswith(b"data: [DONE]")
            assert b'"usage"' not in data  # specwatch asked for usage; the client did not
        else:
            assert "text" in orjson.loads(data)["choices"][0]
    elif fault == "500":
        assert 500 == status
        assert "error" in orjson.loads(data)
    elif fault == "cut":
        # the engine died mid-answer: a 502 before any byte, else the stream ends in an error
        # event (or a broken connection) — never a hang, never a fake success
        assert status in (200, 502)
        assert b"BadGateway" in data or data == b"<broken>" or status == 502
    elif fault == "html":
        assert (200, b"<html><body>upstream busy</body></html>") == (status, data)
    else:  # truncate, bad-json: passed on exactly as the upstream sent it
        assert 200 == status


@pytest.mark.parametrize("fault", FAULTS)
async def test_fault_matrix(upstream: tuple[SimServer, str], fault: str) -> None:
    server, url = upstream
    car = Sidecar(sidecar_settings(url, limits={"upstream_keepalive_seconds": 0.2}))
    await car.start()
    proxy = f"http://127.0.0.1:{car.ports.proxy}/v1/completions"
    sent = 0
    try:
        async with aiohttp.ClientSession() as warm:  # connections and tasks of a first request
            await one(warm, proxy, "none", "reads_all", True)
            sent += 1
        await asyncio.sleep(0.4)  # the first request's idle connections close (keep-alive 0.2 s)
        before = resources()
        for stream in (True, False):
            for client in CLIENTS:
                async with aiohttp.ClientSession() as session:
                    status, data = await one(session, proxy, fault, client, stream, server)
                    sent += 1
                    check_client_view(fault, client, stream, status, data)
                    # the sidecar still serves, whatever just happened
                    ok = await one(session, proxy, "none", "reads_all", stream)
                    sent += 1
                    check_client_view("none", "reads_all", stream, *ok)
        await car.drained()
        # aborted upstream requests settle and idle connections close (keep-alive 0.2 s)
        await eventually(
            lambda: resources()[0] <= before[0] + 3 and resources()[1] <= before[1] + 2,
            seconds=60,
            every=0.1,
        )
        after = resources()
        metrics: Samples = {}

        async def all_counted() -> bool:
            nonlocal metrics
            metrics = await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics")
            return sum(by_label(metrics, C.REQUESTS + "_total", C.Label.OUTCOME).values()) >= sent

        # on a busy machine an aborted request's record can trail the drain: a deadline sized
        # to a machine busy with other work; if one never comes, the assertions below say which
        with contextlib.suppress(AssertionError):
            await eventually(all_counted, seconds=120.0, every=0.1)
    finally:
        await car.stop()
    outcomes = by_label(metrics, C.REQUESTS + "_total", C.Label.OUTCOME)
    assert sent == sum(outcomes.values()), outcomes  # every request in exactly one outcome
    assert server.reported_steps == total(metrics, C.SPEC_STEPS + "_total")
    assert total(metrics, C.SPEC_STEPS + "_total") <= server.metrics.total(C.VLLM_NUM_DRAFTS)
    expected: dict[str, Any] = {
        "500": C.Outcome.UPSTREAM_ERROR,
        "cut": C.Outcome.UPSTREAM_FAILED,
        "truncate": C.Outcome.PARSE_ERROR,
        "html": C.Outcome.PARSE_ERROR,
    }
    if fault in expected:
        assert outcomes.get(expected[fault], 0) >= 1, outcomes
    assert after[0] <= before[0] + 3, (before, after)  # file descriptors
    assert after[1] <= before[1] + 2, (before, after)  # event-loop tasks
