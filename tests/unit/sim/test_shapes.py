"""The simulator answers in the shapes of the real vLLM 0.32 captures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import orjson
from specwatch.engines.vllm.response import event_data
from specwatch.proxy.sse import SseSplitter
from specwatch.sim.server import SimServer


def shape(value: Any) -> Any:
    """Key names in order, recursively; the types of leaves (None and numbers kept apart)."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return ["list", shape(value[0])] if value else ["list"]
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def sse_shapes(data: bytes) -> list[Any]:
    events = SseSplitter(1 << 20).feed(data)
    out = []
    for event in events:
        payload = event_data(event)
        assert payload is not None
        out.append("DONE" if payload == b"[DONE]" else shape(orjson.loads(payload)))
    return out


def first_middle_last(shapes: list[Any]) -> list[Any]:
    """A stream's distinct event shapes, in order (the number of token chunks differs)."""
    distinct: list[Any] = []
    for item in shapes:
        if not distinct or distinct[-1] != item:
            distinct.append(item)
    return distinct


COMPLETION = {"prompt": "def f(x): return x", "max_tokens": 40, "temperature": 0}
CHAT = {
    "messages": [{"role": "user", "content": "hello there"}],
    "max_tokens": 30,
    "temperature": 0,
}


async def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
        return response.status, await response.read()


async def test_non_streaming_shapes_match_the_captures(
    sim: tuple[SimServer, str], captures: Path
) -> None:
    _, url = sim
    for path, body, capture in (
        ("/v1/completions", COMPLETION, "nonstream.json"),
        ("/v1/chat/completions", CHAT, "chat.json"),
    ):
        status, data = await post(url + path, body)
        assert 200 == status
        assert shape(orjson.loads((captures / capture).read_bytes())) == shape(orjson.loads(data))


async def test_streaming_shapes_match_the_captures(
    sim: tuple[SimServer, str], captures: Path
) -> None:
    _, url = sim
    usage = {"stream": True, "stream_options": {"include_usage": True}}
    for path, body, capture in (
        ("/v1/completions", {**COMPLETION, "stream": True}, "stream_nousage.sse"),
        ("/v1/completions", {**COMPLETION, **usage}, "stream_usage.sse"),
        ("/v1/chat/completions", {**CHAT, **usage}, "chat_stream_usage.sse"),
    ):
        status, data = await post(url + path, body)
        assert 200 == status
        expected = first_middle_last(sse_shapes((captures / capture).read_bytes()))
        assert expected == first_middle_last(sse_shapes(data)), capture


async def test_error_shapes_match_the_captures(sim: tuple[SimServer, str], captures: Path) -> None:
    _, url = sim
    for body, capture in (
        ({**COMPLETION, "n": 2}, "n2.json"),
        ({**COMPLETION, "max_tokens": 100_000_000}, "error_toolong.json"),
    ):
        status, data = await post(url + "/v1/completions", body)
        assert 400 == status
        assert shape(orjson.loads((captures / capture).read_bytes())) == shape(orjson.loads(data))
