"""A client's stream options reach it as it meant them: what vLLM would send it direct, whatever
specwatch asks vLLM for on its own behalf (stream_options.include_usage).

vLLM 0.32 honours `continuous_usage_stats` only with `include_usage` (should_include_usage),
and with `--enable-force-include-usage` sends usage, in every chunk too, to everyone. The
simulator follows both rules; the e2e test of the real vLLM path checks them on vLLM itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from specwatch import conventions as C
from specwatch.engines.vllm.response import event_data
from specwatch.proxy.sse import SseSplitter
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimConfig, SimServer

from tests.support.http import post, scrape, serve, sidecar_settings, total


def events(data: bytes) -> list[Any]:
    """The stream's events, with what differs between two requests (id, time) taken out."""
    out: list[Any] = []
    for event in SseSplitter(1 << 20).feed(data):
        payload = event_data(event)
        assert payload is not None
        if payload == b"[DONE]":
            out.append("[DONE]")
            continue
        obj = orjson.loads(payload)
        obj.pop("id")
        obj.pop("created")
        obj.pop("metrics", None)  # timings
        out.append(obj)
    return out


@pytest.fixture(params=[False, True], ids=["vllm-default", "force-include-usage"])
async def forced_sim(request: pytest.FixtureRequest) -> AsyncIterator[tuple[SimServer, str]]:
    server = SimServer(SimConfig(sleep=False, force_include_usage=request.param))
    runner, url = await serve(server.app())
    yield server, url
    await runner.cleanup()


@pytest.fixture
async def forced_sidecar(forced_sim: tuple[SimServer, str]) -> AsyncIterator[Sidecar]:
    sidecar = Sidecar(sidecar_settings(forced_sim[1]))
    await sidecar.start()
    yield sidecar
    await sidecar.stop()


@pytest.mark.parametrize(
    "options",
    [
        None,
        {"continuous_usage_stats": True},
        {"include_usage": False, "continuous_usage_stats": True},
        {"include_usage": True},
        {"include_usage": True, "continuous_usage_stats": True},
    ],
)
@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
async def test_the_client_gets_the_stream_vllm_would_send_it_direct(
    forced_sim: tuple[SimServer, str], forced_sidecar: Sidecar, options: Any, path: str
) -> None:
    server, direct = forced_sim
    proxy = f"http://127.0.0.1:{forced_sidecar.ports.proxy}"
    body: dict[str, Any] = {"max_tokens": 12, "temperature": 0, "stream": True}
    if path == "/v1/completions":
        body["prompt"] = "def add(a, b):"
    else:
        body["messages"] = [{"role": "user", "content": "def add(a, b):"}]
    if options is not None:
        body["stream_options"] = options
    async with aiohttp.ClientSession() as session:
        _, direct_bytes = await post(session, direct + path, body)
        status, proxied_bytes = await post(session, proxy + path, body)
    assert 200 == status
    expected = events(direct_bytes)
    assert expected == events(proxied_bytes)
    usage_in_content = any(
        isinstance(e, dict) and e.get("choices") and "usage" in e for e in expected
    )
    continuous = server.config.force_include_usage or (
        options == {"include_usage": True, "continuous_usage_stats": True}
    )
    assert continuous == usage_in_content  # the simulator follows vLLM's rule
    await forced_sidecar.drained()
    metrics = await scrape(f"http://127.0.0.1:{forced_sidecar.ports.admin}/metrics")
    assert 1 == total(metrics, C.REQUESTS + "_total", outcome=C.Outcome.OBSERVED)
