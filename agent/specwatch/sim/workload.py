"""A mixed workload: several tasks, short to long contexts, chat and completions, streams or not.

Each request carries its true task as a `[task:NAME]` marker the simulator reads; most also send
the task header, the rest are left to specwatch's classifier. Seeded and deterministic.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from specwatch.conventions import Header

TASK_WEIGHTS: dict[str, float] = {
    "code": 0.30,
    "chat": 0.30,
    "summarization": 0.15,
    "translation": 0.15,
    "reasoning": 0.10,
}
# (low, high) prompt lengths in tokens and their weights: mostly short, a long tail.
CONTEXT_RANGES: tuple[tuple[tuple[int, int], float], ...] = (
    ((32, 480), 0.45),
    ((600, 1900), 0.30),
    ((2100, 3900), 0.15),
    ((4200, 7800), 0.10),
)
OPENERS = {
    "code": "Write a python function that parses this log and fix the bug:\n```\n",
    "chat": "Hi! Could you tell me a bit about your weekend plans and",
    "summarization": "Summarize the following report in three sentences:",
    "translation": "Translate the following text into German:",
    "reasoning": "Solve this step by step and explain:",
}
FILLER = (  # noqa: SIM905  # a sentence reads better than a list of 27 words
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua ut enim ad minim veniam quis nostrud exercitation"
).split()


@dataclass(frozen=True, slots=True)
class RequestSpec:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    task: str
    prompt_words: int


def _prompt(rng: random.Random, task: str, words: int) -> str:
    opener = f"[task:{task}] {OPENERS[task]}"
    need = max(0, words - len(opener.split()))
    return opener + " " + " ".join(FILLER[rng.randrange(len(FILLER))] for _ in range(need))


def make_request(rng: random.Random, model: str, header_share: float = 0.8) -> RequestSpec:
    task = rng.choices(list(TASK_WEIGHTS), weights=list(TASK_WEIGHTS.values()))[0]
    (low, high), _ = rng.choices(CONTEXT_RANGES, weights=[w for _, w in CONTEXT_RANGES])[0]
    words = rng.randrange(low, high)
    text = _prompt(rng, task, words)
    chat = rng.random() < 0.5
    body: dict[str, Any] = {"model": model, "max_tokens": rng.randrange(32, 129), "temperature": 0}
    if chat:
        body["messages"] = [{"role": "user", "content": text}]
    else:
        body["prompt"] = text
    if rng.random() < 0.5:
        body["stream"] = True
        if rng.random() < 0.5:
            body["stream_options"] = {"include_usage": True}
    headers: dict[str, str] = {Header.TASK: task} if rng.random() < header_share else {}
    path = "/v1/chat/completions" if chat else "/v1/completions"
    return RequestSpec(path=path, body=body, headers=headers, task=task, prompt_words=words)


@dataclass(slots=True)
class LoadResult:
    sent: int = 0
    ok: int = 0
    failed: int = 0


async def send(session: aiohttp.ClientSession, base: str, spec: RequestSpec) -> float:
    """Send one request, read the whole answer; return its latency in seconds."""
    started = time.perf_counter()
    async with session.post(base + spec.path, json=spec.body, headers=spec.headers) as response:
        await response.read()
        response.raise_for_status()
    return time.perf_counter() - started


async def run_load(
    base: str,
    model: str,
    *,
    seed: int,
    concurrency: int,
    duration: float | None = None,
    requests: int | None = None,
) -> LoadResult:
    """Closed-loop load: `concurrency` workers until `duration` seconds or `requests` are sent."""
    rng = random.Random(seed)
    result = LoadResult()
    deadline = None if duration is None else time.monotonic() + duration

    def more() -> bool:
        if requests is not None and result.sent >= requests:
            return False
        return deadline is None or time.monotonic() < deadline

    async def worker(session: aiohttp.ClientSession) -> None:
        while more():
            spec = make_request(rng, model)
            result.sent += 1
            try:
                await send(session, base, spec)
                result.ok += 1
            except (aiohttp.ClientError, TimeoutError):
                result.failed += 1

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return result
