"""Other engines through the real proxy, against the simulator answering like each
(`specwatch sim --engine`): llama.cpp's totals, TensorRT-LLM's fixed-width histogram (per-step
data), SGLang's `sglext` (asked for on the client's behalf, and taken out again); vLLM's
token-in, token-out endpoint. What each engine's data
supports is what /status says it supports, and specwatch's totals equal the engine's own
counters (coverage 1): llama.cpp's, TensorRT-LLM's at /prometheus/metrics (its JSON /metrics,
drained when read, never touched), SGLang's count of verified steps; the last two make their
counters at the first count, after the sidecar's first scrape."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from specwatch import conventions as C
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import assert_status_valid
from tests.support.http import eventually, get_json, post, scrape, serve, sidecar_settings, total
from tests.support.workloads import mixed_requests

SUPPORTS = {
    "llamacpp": ("totals", {"alpha_hat": False, "rate": True, "tau": False, "per_position": False}),
    "trtllm": ("per_step", {"alpha_hat": True, "rate": True, "tau": True, "per_position": True}),
    "sglang": ("per_step", {"alpha_hat": True, "rate": True, "tau": True, "per_position": True}),
}


@asynccontextmanager
async def proxied(engine: str, **overrides: Any) -> AsyncIterator[tuple[SimServer, Sidecar]]:
    server = SimServer(SimConfig(engine=engine, sleep=False, cost=CostModel(target_step_ms=0.1)))
    runner, url = await serve(server.app())
    settings = sidecar_settings(
        url, scrape_interval_seconds=0.2, limits={"version_wait_seconds": 5}, **overrides
    )
    car = Sidecar(settings)
    await car.start()
    await car.config.resolved.wait()  # what to ask each engine for depends on which it is
    try:
        yield server, car
    finally:
        await car.stop()
        await runner.cleanup()


async def send(car: Sidecar, requests: list[tuple[str, dict[str, Any], dict[str, str]]]) -> None:
    proxy = f"http://127.0.0.1:{car.ports.proxy}"
    async with aiohttp.ClientSession() as session:
        answers = await asyncio.gather(*(post(session, proxy + p, b, h) for p, b, h in requests))
    assert [200] * len(requests) == [status for status, _ in answers]


@pytest.mark.parametrize("engine", sorted(SUPPORTS))
async def test_each_engines_data_is_read_and_judged_for_what_it_supports(engine: str) -> None:
    requests = mixed_requests(seed=3, n=24)
    async with proxied(engine) as (server, car):
        await send(car, requests)
        await car.drained()
        admin = f"http://127.0.0.1:{car.ports.admin}"
        status: dict[str, Any] = {}

        async def settled() -> bool:  # the engine known, the scrape after the last request in
            status.update(await get_json(admin + "/status"))
            coverage = total(await scrape(admin + "/metrics"), C.COVERAGE_RATIO)
            return status["config"]["engine"] == engine and coverage == 1.0

        await eventually(settled, seconds=15)
        metrics = await scrape(admin + "/metrics")
    assert_status_valid(status)
    model = server.config.model
    kind, supports = SUPPORTS[engine]
    assert {"data": kind, "supports": supports}.items() <= status["per_request_data"][model].items()
    assert status["per_request_data"][model]["with"] == len(requests)
    counted = server.metrics.totals()
    ours = (total(metrics, C.DRAFT_TOKENS + "_total"), total(metrics, C.ACCEPTED_TOKENS + "_total"))
    # SGLang's proposed = verify count x width: the sim's steps all draft K
    assert ours == (counted["draft_tokens"], counted["accepted"])
    assert server.metrics_json_reads == 0  # TensorRT-LLM's drained JSON page left alone
    (rollup,) = status["models"]
    assert rollup["zone_metric"] == ("rate" if engine == "llamacpp" else "alpha")
    assert (rollup["alpha"] is None) == (engine == "llamacpp")


async def test_vllms_token_endpoint_is_observed_like_the_openai_paths() -> None:
    async with proxied("vllm") as (server, car):
        body = {"token_ids": list(range(100, 260)), "max_tokens": 30, "stream": False}
        await send(car, [(C.GENERATE_PATH, body, {"X-Task-Type": "code"})])
        await car.drained()
        status = await get_json(f"http://127.0.0.1:{car.ports.admin}/status")
    assert status["requests_by_outcome"] == {C.Outcome.OBSERVED: 1}
    (rollup,) = status["models"]
    assert rollup["since_start"]["draft_tokens"] == server.metrics.totals()["draft_tokens"] > 0
    (piece,) = status["slices"]
    assert piece["ctx_bucket"] == "0-512"  # its 160 prompt tokens, from the request's token_ids


def _unstamped(answer: bytes) -> bytes:
    """An answer without the second it was made in (`created`), which two runs need not share."""
    return re.sub(rb'"created":\d+', b'"created":0', answer)


async def test_sglang_is_asked_for_its_details_and_its_client_gets_what_it_would_have() -> None:
    requests = mixed_requests(seed=5, n=6)  # chat and completions; whole, streamed, with usage
    asked_itself: tuple[str, dict[str, Any], dict[str, str]] = (
        "/v1/completions",
        {**requests[1][1], "return_spec_tokens_details": True},
        {},
    )
    requests.append(asked_itself)
    async with proxied("sglang") as (server, car):
        proxy, direct = f"http://127.0.0.1:{car.ports.proxy}", car.settings.upstream
        async with aiohttp.ClientSession() as session:
            through = [await post(session, proxy + p, b, h) for p, b, h in requests]
            alone = [await post(session, direct + p, b, h) for p, b, h in requests]
        await car.drained()
        status = await get_json(f"http://127.0.0.1:{car.ports.admin}/status")
    assert [_unstamped(body) for _, body in through] == [_unstamped(body) for _, body in alone]
    assert b"sglext" not in b"".join(body for _, body in through[:-1])
    assert b'"spec_tokens_details"' in through[-1][1]  # the client that asked has them still
    # every request read: the details were there for specwatch though the clients never saw them
    assert status["requests_by_outcome"] == {C.Outcome.OBSERVED: len(requests)}
    assert status["per_request_data"][server.config.model]["with"] == len(requests)


async def test_sglangs_tree_drafts_are_read_as_totals_and_status_says_why() -> None:
    """--speculative-eagle-topk 4: a step verifies a tree; its nodes are SGLang's proposed
    drafts and its histogram counts accepted depths. Read per step it would give an alpha-hat
    of nothing real: read as totals, alpha-hat is null and /status says why."""
    tree = '{"method": "eagle", "eagle_topk": 4, "num_speculative_tokens": 7}'
    async with proxied("sglang", speculative_config=tree) as (server, car):
        assert car.config.config.tree_topk == 4
        await send(car, mixed_requests(seed=4, n=8))
        await car.drained()
        status = await get_json(f"http://127.0.0.1:{car.ports.admin}/status")
    assert_status_valid(status)
    data = status["per_request_data"][server.config.model]
    assert (data["data"], data["supports"]["alpha_hat"], data["supports"]["per_position"]) == (
        "totals",
        False,
        False,
    )
    assert data["supports"]["tau"] is True
    assert "--speculative-eagle-topk" in data["reason"]
    (rollup,) = status["models"]
    assert rollup["alpha"] is None
