"""The shadow check: is the speculative server's greedy output the baseline's?

Off by default (`shadow.fraction` 0). A share of the temperature-0 requests served by the
speculative upstream is sent again, after the client's response is complete, to the baseline
upstream (`ab.baseline_upstream`, no speculation) as a non-streaming request, and the two
output texts are compared. With correct speculative decoding they are identical; a difference
is a correctness problem of the server. Counted per model (comparisons, and those that
diverged); nothing of the texts is logged or kept. Bounded: at most `shadow.max_in_flight`
comparisons run at once, the rest are skipped and counted; both outputs are held against the
proxy's byte budget (proxy/budget.py) while compared, the baseline's read up to
`limits.max_response_bytes`: without room, or past it, the comparison is skipped and counted.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from typing import Any

import aiohttp
import orjson
import structlog

from specwatch import conventions as C
from specwatch.core.health import Health
from specwatch.engines.vllm.response import choice_text, event_data, first_choice
from specwatch.proxy.budget import ByteBudget, Held
from specwatch.proxy.sse import SseSplitter
from specwatch.settings import Settings

log = structlog.get_logger("specwatch.shadow")

SKIP_BUSY, SKIP_FAILED, SKIP_MEMORY = "busy", "baseline_failed", "memory_budget"


def _choice_text(obj: Any) -> str | None:
    choice = first_choice(obj)
    return None if choice is None else choice_text(choice)


def output_text(data: bytes, stream: bool) -> str | None:
    """The first choice's text of a JSON body, or of an SSE stream's chunks, joined."""
    try:
        if not stream:
            return _choice_text(orjson.loads(data))
        splitter = SseSplitter(len(data) + 1)
        parts = []
        for event in [*splitter.feed(data), splitter.flush()]:
            payload = event_data(event) if event else None
            if not payload or payload == b"[DONE]":
                continue
            text = _choice_text(orjson.loads(payload))
            if text:
                parts.append(text)
        return "".join(parts)
    except orjson.JSONDecodeError:
        return None


def first_divergence(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    """Index of the first difference (a length difference counts), None when equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


class Shadow:
    """Decides which requests to shadow and runs the comparisons in the background."""

    def __init__(
        self,
        settings: Settings,
        health: Health,
        session: Callable[[], aiohttp.ClientSession],
        budget: ByteBudget,
        rng: random.Random | None = None,
    ) -> None:
        self._cfg = settings.shadow
        self._budget = budget
        self._max_response = settings.limits.max_response_bytes
        self._baseline = settings.ab.baseline_upstream
        self._health = health
        self._session = session
        self._rng = rng or random.Random()
        self._tasks: set[asyncio.Task[None]] = set()
        self._max_models = settings.limits.max_models
        self.enabled = self._cfg.fraction > 0 and self._baseline is not None

    def wanted(self, body: dict[str, Any] | None, variant: str) -> bool:
        """A greedy, single-choice request the speculative side serves, in the sampled share."""
        if not self.enabled or body is None or variant != C.VARIANT_SPEC:
            return False
        if body.get("temperature") != 0 or body.get("n", 1) != 1:
            return False
        return self._rng.random() < self._cfg.fraction

    def model_label(self, model: Any) -> str:
        known = self._health.shadow_comparisons
        if isinstance(model, str) and (model in known or len(known) < self._max_models):
            return model
        return C.OTHER

    def start(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        spec_output: bytes,
        stream: bool,
    ) -> None:
        """Begin one comparison in the background (the client already has its answer)."""
        if len(self._tasks) >= self._cfg.max_in_flight:
            self._health.shadow_skipped[SKIP_BUSY] += 1
            return
        held = Held(self._budget)
        if not held.take(len(spec_output)):
            self._health.shadow_skipped[SKIP_MEMORY] += 1
            return
        task = asyncio.create_task(self._compare(path, body, headers, spec_output, stream, held))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: held.release())  # however it ends, cancelled too

    async def _compare(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        spec_output: bytes,
        stream: bool,
        held: Held,
    ) -> None:
        model = self.model_label(body.get("model"))
        spec_text = output_text(spec_output, stream)
        request = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        try:
            assert self._baseline is not None
            async with asyncio.timeout(self._cfg.timeout_seconds):
                async with self._session().post(
                    self._baseline + path, data=orjson.dumps(request), headers=headers
                ) as response:
                    data = await self._read(response, held)
                    status = response.status
        except (aiohttp.ClientError, TimeoutError):
            self._health.shadow_skipped[SKIP_FAILED] += 1
            return
        if data is None:
            self._health.shadow_skipped[SKIP_MEMORY] += 1
            return
        base_text = output_text(data, stream=False) if status == 200 else None
        if spec_text is None or base_text is None:
            self._health.shadow_skipped[SKIP_FAILED] += 1
            return
        self._health.shadow_comparisons[model] += 1
        at = first_divergence(spec_text, base_text)
        if at is not None:
            self._health.shadow_divergences[model] += 1
            log.warning("output_divergence", model=model, first_difference_at_char=at)

    async def _read(self, response: aiohttp.ClientResponse, held: Held) -> bytes | None:
        """The baseline's body, each piece held against the budget; None past the response
        limit or when the budget has no room."""
        parts, size = [], 0
        async for piece in response.content.iter_any():
            size += len(piece)
            if size > self._max_response or not held.take(len(piece)):
                return None
            parts.append(piece)
        return b"".join(parts)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
