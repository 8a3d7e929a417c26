"""Send one benchmark request as a stream and time it as the client sees it.

TTFT: request sent -> first chunk with output. Inter-token latency: gaps between arrivals of
output (a speculative step may bring several tokens in one chunk, and events read from the
socket together count as one arrival: that is what a client sees).
TPOT: (end-to-end - TTFT) / (output tokens - 1), tokens from the usage chunk. The final usage
chunk also carries vLLM's per-request speculative decoding block and its own timings when the
server sends them (`--enable-per-request-metrics`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from specwatch.bench.workload import BenchRequest
from specwatch.core.records import SpecDecodeBlock
from specwatch.engines.vllm.response import (
    ParseFailure,
    choice_text,
    event_data,
    first_choice,
    parse_response_object,
)
from specwatch.proxy.sse import SseSplitter

MAX_EVENT_BYTES = 1 << 20


@dataclass(slots=True)
class Sample:
    """One request against one target: what came back and when."""

    index: int
    target: str
    task: str = ""
    temperature: float | None = None  # set on distribution-check samples
    ok: bool = False
    error: str | None = None
    status: int | None = None
    started: float = 0.0  # perf_counter at send
    ttft: float | None = None
    e2e: float | None = None
    gaps: list[float] = field(default_factory=list)
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    spec: SpecDecodeBlock | None = None
    server_ttft: float | None = None  # vLLM's own timings (per-request metrics), when sent
    server_e2e: float | None = None
    text: str = ""
    token_ids: list[int] | None = None

    @property
    def tpot(self) -> float | None:
        if self.e2e is None or self.ttft is None or not self.output_tokens:
            return None
        if self.output_tokens < 2:
            return None
        return (self.e2e - self.ttft) / (self.output_tokens - 1)


def _output_of(chunk: dict[str, Any]) -> tuple[str, list[int] | None]:
    choice = first_choice(chunk)
    if choice is None:
        return "", None
    ids = choice.get("token_ids")
    token_ids = ids if isinstance(ids, list) and all(isinstance(t, int) for t in ids) else None
    return choice_text(choice) or "", token_ids


def _read_event(sample: Sample, data: bytes) -> bool:
    """Apply one SSE event; whether it carried output."""
    if data == b"[DONE]":
        return False
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        sample.error = "invalid JSON in the stream"
        return False
    if not isinstance(chunk, dict):
        return False
    if chunk.get("usage") and not chunk.get("choices"):
        try:
            parsed = parse_response_object(chunk)
        except ParseFailure as failure:
            sample.error = f"unreadable usage chunk: {failure.reason}"
            return False
        sample.prompt_tokens = parsed.prompt_tokens
        sample.output_tokens = parsed.completion_tokens
        sample.spec = parsed.spec
        sample.server_ttft, sample.server_e2e = parsed.latency.ttft, parsed.latency.e2e
        return False
    if "error" in chunk:
        sample.error = "error event in the stream"
        return False
    text, token_ids = _output_of(chunk)
    if token_ids is not None:
        if sample.token_ids is None:
            sample.token_ids = []
        sample.token_ids.extend(token_ids)
    sample.text += text
    return bool(text) or token_ids is not None  # not e.g. the chat role chunk


async def measure(
    session: aiohttp.ClientSession,
    base: str,
    name: str,
    request: BenchRequest,
    body: dict[str, Any],
    headers: dict[str, str],
) -> Sample:
    """Send `body`; never raises for what the server or the network does (see `error`)."""
    sample = Sample(
        index=request.index, target=name, task=request.task, temperature=request.temperature
    )
    sample.started = time.perf_counter()
    splitter = SseSplitter(MAX_EVENT_BYTES)
    last: float | None = None
    try:
        async with session.post(
            base + request.path, data=orjson.dumps(body), headers=headers
        ) as response:
            sample.status = response.status
            if response.status != 200:
                text = (await response.read())[:300].decode("utf-8", errors="replace")
                sample.error = f"HTTP {response.status}: {text}"
                return sample
            async for chunk in response.content.iter_any():
                now = time.perf_counter()
                output = False
                for event in splitter.feed(chunk):
                    data = event_data(event)
                    if data is not None:
                        output = _read_event(sample, data) or output
                if not output:
                    continue
                # Events read together arrived together: one arrival, one gap.
                if sample.ttft is None:
                    sample.ttft = now - sample.started
                elif last is not None:
                    sample.gaps.append(now - last)
                last = now
        sample.e2e = time.perf_counter() - sample.started
    except (aiohttp.ClientError, TimeoutError) as error:
        sample.error = f"{type(error).__name__}: {error}"[:300]
        return sample
    if sample.error is None and sample.output_tokens is None:
        sample.error = "the stream ended without a usage chunk"
    sample.ok = sample.error is None and sample.ttft is not None
    return sample
