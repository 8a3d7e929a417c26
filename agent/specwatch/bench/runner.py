"""Drive the workload against the targets: interleaved blocks, closed loop or Poisson arrivals.

With several targets the requests are cut into blocks and each block runs against every
target in turn, the order alternating (A B, B A, A B, ...): whatever changes over the run (a
noisy neighbour, a warming cache) falls on every target alike, and each target is measured
alone, under the load asked for. Throughput is output tokens over the time a target was busy.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from specwatch.bench.client import Sample, measure
from specwatch.bench.workload import BenchRequest
from specwatch.conventions import Header

TASK_HEADER = Header.TASK


@dataclass(frozen=True, slots=True)
class Target:
    name: str  # "baseline", "spec", "K=3", ...
    url: str
    model: str | None = None  # None: the first model the server lists


@dataclass(frozen=True, slots=True)
class Load:
    concurrency: int = 8
    rate: float | None = None  # requests/s with Poisson arrivals; None: closed loop
    temperature: float = 0.0
    seed: int | None = None  # sent as the request seed, for sampling at temperature > 0
    timeout: float = 600.0
    block: int = 0  # requests per interleaved block; 0: max(32, 4 x concurrency)
    token_ids: bool = True  # ask for output token ids (vLLM's return_token_ids)


@dataclass(slots=True)
class TargetRun:
    target: Target
    model: str = ""
    samples: list[Sample] = field(default_factory=list)
    busy_seconds: float = 0.0
    quality: list[Sample] = field(default_factory=list)  # temperature > 0 samples, apart


async def served_model(session: aiohttp.ClientSession, url: str) -> str:
    """The first model a server lists under /v1/models."""
    async with session.get(url + "/v1/models") as response:
        response.raise_for_status()
        document: Any = await response.json(content_type=None)
    try:
        return str(document["data"][0]["id"])
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"{url}/v1/models lists no model") from None


async def wait_ready(url: str, within: float, is_alive: Callable[[], bool]) -> None:
    """Poll `/health` until it answers 200; raise when the server died or time is up."""
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while time.monotonic() < deadline:
            if not is_alive():
                raise RuntimeError(f"the server for {url} exited before it was ready")
            try:
                async with session.get(url + "/health") as response:
                    if response.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.5)
    raise TimeoutError(f"{url} was not ready within {within:.0f} s")


async def _block(
    session: aiohttp.ClientSession,
    run: TargetRun,
    requests: Sequence[BenchRequest],
    load: Load,
    progress: Callable[[], None],
    timed: bool = True,
) -> None:
    """One block against one target; samples land in `run` as they finish. `timed`: its
    duration counts as the target's busy time (throughput), which quality samples' does not."""
    queue = list(reversed(requests))  # pop() takes them in order
    started = time.perf_counter()

    async def one(request: BenchRequest) -> None:
        body = request.body(run.model, load.temperature, load.seed, load.token_ids)
        headers = {TASK_HEADER: request.task, "Content-Type": "application/json"}
        sample = await measure(session, run.target.url, run.target.name, request, body, headers)
        (run.quality if request.temperature is not None else run.samples).append(sample)
        progress()

    try:
        if load.rate is None:

            async def worker() -> None:
                while queue:
                    await one(queue.pop())

            await asyncio.gather(*(worker() for _ in range(load.concurrency)))
        else:
            rng = random.Random(requests[0].index if requests else 0)
            tasks = []
            for request in requests:
                tasks.append(asyncio.create_task(one(request)))
                await asyncio.sleep(rng.expovariate(load.rate))
            await asyncio.gather(*tasks)
    finally:
        if timed:
            run.busy_seconds += time.perf_counter() - started


async def run_targets(
    targets: Sequence[Target],
    requests: Sequence[BenchRequest],
    load: Load,
    progress: Callable[[], None] = lambda: None,
    runs: list[TargetRun] | None = None,
    warmup: Sequence[BenchRequest] = (),
    quality: Callable[[str], Sequence[BenchRequest]] = lambda _name: (),
) -> list[TargetRun]:
    """Every request against every target, interleaved in blocks. On cancellation the runs hold
    every sample that finished (pass `runs` to keep them when the caller cancels). `warmup`
    requests go to each target first and are not recorded; `quality(name)` gives each target's
    distribution-check requests, run last and kept apart (`TargetRun.quality`)."""
    runs = [] if runs is None else runs
    mine: list[TargetRun] = []
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=load.timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        for target in targets:
            model = target.model or await served_model(session, target.url)
            mine.append(TargetRun(target=target, model=model))
        runs.extend(mine)
        for run in mine:  # first requests pay for lazy initialisation: not measured
            await _block(session, TargetRun(run.target, run.model), warmup, load, lambda: None)
        size = load.block or max(32, 4 * load.concurrency)
        for number, start in enumerate(range(0, len(requests), size)):
            block = requests[start : start + size]
            order = mine if number % 2 == 0 else list(reversed(mine))
            for run in order:
                await _block(session, run, block, load, progress)
        for run in mine:  # the distribution check's samples, after the measured ones
            extra = quality(run.target.name)
            if extra:
                await _block(session, run, extra, replace(load, rate=None), progress, timed=False)
    return runs
