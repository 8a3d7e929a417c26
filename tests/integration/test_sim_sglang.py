"""The simulator answering as SGLang (`specwatch sim --engine sglang`, sim/sglang.py) lays out
every answer as SGLang 0.5.23's own classes do (tests/fixtures/sglang-0.5.23, written by them:
tools/sglang_fixtures.py): the same members in the same order, each of the same JSON type,
event by event. The demo and the fast tests then exercise what SGLang really sends (the
`"usage":null` its details chunk carries, which the hand-written shapes lacked)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import ROOT
from tests.support.http import post, serve

ANSWERS = ROOT / "tests" / "fixtures" / "sglang-0.5.23"


def skeleton(value: Any) -> Any:
    """A JSON value's layout: members in order, lists by their first item, leaves by type."""
    if isinstance(value, dict):
        return tuple((name, skeleton(inner)) for name, inner in value.items())
    if isinstance(value, list):
        return ("list", skeleton(value[0]) if value else None)
    return "null" if value is None else type(value).__name__


def stream_layout(raw: bytes) -> list[Any]:
    """Each event's layout, runs of the same layout (content chunks) as one."""
    out: list[Any] = []
    for part in raw.split(b"\n\n"):
        if not part:
            continue
        assert part.startswith(b"data: "), part
        data = part[6:]
        layout = "[DONE]" if data == b"[DONE]" else skeleton(orjson.loads(data))
        if not out or out[-1] != layout:
            out.append(layout)
    return out


@pytest.fixture
async def sim() -> Any:
    server = SimServer(SimConfig(engine="sglang", sleep=False, cost=CostModel(target_step_ms=0.1)))
    runner, url = await serve(server.app())
    try:
        yield url, server.config.model
    finally:
        await runner.cleanup()


def request(model: str, chat: bool, stream: bool, asked: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": 24, "temperature": 0}
    if chat:
        body["messages"] = [{"role": "user", "content": "What is 2 + 2?"}]
    else:
        body["prompt"] = "What is 2 + 2?"
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    if asked:
        body["return_spec_tokens_details"] = True
    return body


@pytest.mark.parametrize("kind", ["chat", "completion"])
@pytest.mark.parametrize("asked", [True, False])
async def test_the_simulators_sglang_answers_are_laid_out_as_sglangs_own(
    sim: tuple[str, str], kind: str, asked: bool
) -> None:
    (url, model), chat = sim, kind == "chat"
    path = "/v1/chat/completions" if chat else "/v1/completions"
    tail = "" if asked else "_plain"
    async with aiohttp.ClientSession() as session:
        whole = await post(session, url + path, request(model, chat, False, asked))
        streamed = await post(session, url + path, request(model, chat, True, asked))
    assert (whole[0], streamed[0]) == (200, 200)
    expected = orjson.loads((ANSWERS / f"{kind}{tail}.json").read_bytes())
    assert skeleton(orjson.loads(whole[1])) == skeleton(expected)
    own = (ANSWERS / f"{kind}_stream_usage{tail}.sse").read_bytes()
    assert stream_layout(streamed[1]) == stream_layout(own)
