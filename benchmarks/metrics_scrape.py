"""/metrics at full cardinality: how long one scrape takes, and whether memory stays flat.

Fills the analysis with every slice the default limits allow (16 models x 6 ctx buckets x 9
tasks, K = 7 so every per-position series exists, A/B variants and latency histograms
included), then times what the admin endpoint does per scrape (a snapshot of the analysis and
the text exposition of every family: specwatch's writer, export/exposition.py, and
prometheus-client's generate_latest side by side on the same registry, outputs compared byte
for byte) and reads the resident set size over many scrapes. specwatch's writer keeps the text
of groups that did not change, so it is timed twice per round: right after the previous scrape
(nothing new) and after a scrape interval of traffic (`--rate` requests/s for 15 s into random
slices, the clock moved on). Target (issue #15): a scrape <= 10 ms, RSS flat.

What a scrape costs the proxy is the time it holds the event loop. The sidecar scrapes on the
loop in steps of about a millisecond (the reading, steps.ReadGate; the families and their
text), relaying in between (`Exposition.scrape`); the last part measures the loop's longest
stall during a scrape after traffic (a 0.5 ms ticker on the loop), that way, all in one go,
and as before 2026-12-02 (the reading in one go on the loop, the text written in a worker
thread: the thread had the interpreter 10-50 ms at a time on this machine, whatever the switch
interval), in turn in one run.

    .venv/bin/python benchmarks/metrics_scrape.py [--scrapes 300]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import time
from collections.abc import Callable, Generator
from functools import partial

import psutil
from prometheus_client import CollectorRegistry, generate_latest
from specwatch.analysis.analyzer import Analyzer
from specwatch.core.health import Health
from specwatch.core.heap import settle_heap
from specwatch.core.logs import configure
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.core.turns import ReadGate
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition
from specwatch.export.reading import Reading
from specwatch.settings import load_settings

MODELS = 16
TASKS = ("code", "chat", "summarization", "translation", "reasoning", "rag", "math",
         "extraction", "other")  # fmt: skip
PROMPTS = (100, 1000, 3000, 6000, 20000, 40000)  # one per default ctx bucket
K = 7


def ingest(
    analyzer: Analyzer, rng: random.Random, ts: float, model: str, task: str, prompt: int
) -> None:
    steps = rng.randrange(6, 15)
    accepted = tuple(min(K, int(rng.expovariate(0.4))) for _ in range(steps))
    analyzer.ingest(
        RequestRecord(
            ts=ts, request_id="r", model=model, task=task, outcome="observed",
            prompt_tokens=prompt + rng.randrange(50), completion_tokens=steps * 3,
            spec=SpecDecodeBlock(K, (K,) * steps, accepted),
            latency=Latency(ttft=0.05, tpot=0.01, e2e=0.5),
        )
    )  # fmt: skip


def fill(analyzer: Analyzer, rng: random.Random, per_slice: int) -> float:
    ts = 0.0
    for _ in range(per_slice):
        for m in range(MODELS):
            for task in TASKS:
                for prompt in PROMPTS:
                    ts += 0.001
                    ingest(analyzer, rng, ts, f"model-{m}", task, prompt)
    analyzer.evaluate(ts)
    return ts


def rss_mib() -> float:
    return float(psutil.Process().memory_info().rss) / 2**20


async def ticker(gaps: list[float]) -> None:
    """Note how long the loop went between this task's turns (s), one every 0.5 ms."""
    loop = asyncio.get_running_loop()
    last = loop.time()
    while True:
        await asyncio.sleep(0.0005)
        gaps.append(loop.time() - last)
        last = loop.time()


async def stalls(
    exposition: Exposition, read: Callable[[], Reading], traffic: Callable[[], object], rounds: int
) -> dict[str, list[float]]:
    """Per scrape after traffic, the longest the loop went without running a ready task
    (ms): the scrape in one go, the reading in one go and the text written in a thread, and
    `Exposition.scrape` (in steps), in turn."""
    gaps: list[float] = []

    ways = (
        "in one go on the loop",
        "reading in one go, text in a thread",
        "in steps on the loop (the sidecar's)",
    )
    out: dict[str, list[float]] = {way: [] for way in ways}
    tick = asyncio.create_task(ticker(gaps))
    for i in range(len(ways) * rounds):
        traffic()
        await asyncio.sleep(0.01)
        gaps.clear()
        way = i % len(ways)
        if way == 0:
            exposition.render()
        elif way == 1:
            await asyncio.to_thread(exposition.render, read())
        else:
            await exposition.scrape()
        await asyncio.sleep(0.002)
        out[ways[way]].append(max(gaps) * 1000.0)
    tick.cancel()
    return out


async def evaluation_stalls(
    analyzer: Analyzer, traffic: Callable[[], float], rounds: int
) -> dict[str, list[float]]:
    """Per evaluation after traffic, the longest the loop went without running a ready task
    (ms): the evaluation in one go, and in steps through the gate (the sidecar's), in turn."""
    gaps: list[float] = []
    gate = ReadGate(failed=lambda error: None)

    ways = ("in one go on the loop", "in steps on the loop (the sidecar's)")
    out: dict[str, list[float]] = {way: [] for way in ways}
    tick = asyncio.create_task(ticker(gaps))
    for i in range(len(ways) * rounds):
        now = traffic()
        await asyncio.sleep(0.01)
        gaps.clear()
        if i % 2 == 0:
            analyzer.evaluate(now)
        else:
            await gate.read(partial(analyzer.evaluate_in_turns, now))
        await asyncio.sleep(0.002)
        out[ways[i % 2]].append(max(gaps) * 1000.0)
    tick.cancel()
    return out


def collections(
    traffic: Callable[[], object], exposition: Exposition, rounds: int
) -> dict[str, tuple[list[int], list[float], float]]:
    """The cycle collector's work over traffic + scrape cycles, with the sidecar's thresholds
    (core/heap.settle_heap) and with Python's default ones, 10 cycles each in turn (the
    start-up heap frozen in both): per generation, how many collections and the longest (ms),
    and the time in all of them."""
    policies = {"the sidecar's thresholds": gc.get_threshold(), "Python's": (700, 10, 10)}
    out = {name: ([0, 0, 0], [0.0, 0.0, 0.0], 0.0) for name in policies}
    started: list[float] = []
    current = ""

    def observe(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
            return
        took = (time.perf_counter() - started[0]) * 1000.0
        counts, longest, total = out[current]
        generation = info["generation"]
        counts[generation] += 1
        longest[generation] = round(max(longest[generation], took), 1)
        out[current] = (counts, longest, total + took)

    gc.callbacks.append(observe)
    try:
        for _ in range(rounds):
            for name, thresholds in policies.items():
                gc.set_threshold(*thresholds)
                current = name
                for _ in range(10):
                    traffic()
                    exposition.render()
    finally:
        gc.callbacks.remove(observe)
        gc.set_threshold(*policies["the sidecar's thresholds"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrapes", type=int, default=300)
    parser.add_argument("--reference-scrapes", type=int, default=20, help="generate_latest's")
    parser.add_argument("--rate", type=float, default=20.0, help="requests/s between scrapes")
    parser.add_argument("--stall-rounds", type=int, default=30, help="scrapes per way")
    parser.add_argument("--gc-rounds", type=int, default=6, help="10 scrapes per policy each")
    args = parser.parse_args()
    configure("warning", "console")
    settings = load_settings()
    settle_heap()  # as the sidecar does before it serves
    analyzer = Analyzer(settings, started=0.0)
    now = fill(analyzer, random.Random(1), per_slice=3)
    health = Health()

    def read() -> Reading:
        return Reading(analyzer.snapshot(now), health.snapshot())

    def steps() -> Generator[None, None, Reading]:
        snapshot = yield from analyzer.snapshot_in_turns(now)
        return Reading(snapshot, health.snapshot())

    gate = ReadGate(failed=lambda error: None)

    async def in_steps() -> Reading:
        return await gate.read(steps)

    collector = SpecwatchCollector(read, settings.cost)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    exposition = Exposition(collector, read=in_steps)
    body = exposition.render()
    if body != generate_latest(registry):
        raise SystemExit("the two expositions differ")
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    rng = random.Random(2)

    def traffic(evaluate: bool = True, rate: float = args.rate) -> float:
        """Between two scrapes: a 15 s scrape interval of `rate` requests/s, spread over
        random slices, and the clock moves on (windows slide, drift is judged: `evaluate`);
        the clock's time."""
        nonlocal now
        for _ in range(int(rate * 15)):
            now += 15.0 / (rate * 15)
            ingest(analyzer, rng, now, f"model-{rng.randrange(MODELS)}", rng.choice(TASKS),
                   rng.choice(PROMPTS))  # fmt: skip
        if evaluate:
            analyzer.evaluate(now)
        return now

    times: dict[str, list[float]] = {"unchanged": [], "traffic": [], "generate_latest": []}
    for i in range(args.scrapes):
        started = time.perf_counter()
        exposition.render()
        times["unchanged"].append((time.perf_counter() - started) * 1000.0)
        traffic()
        started = time.perf_counter()
        exposition.render()
        times["traffic"].append((time.perf_counter() - started) * 1000.0)
        if i < args.reference_scrapes:
            started = time.perf_counter()
            generate_latest(registry)
            times["generate_latest"].append((time.perf_counter() - started) * 1000.0)
    if exposition.render() != generate_latest(registry):
        raise SystemExit("the two expositions differ after traffic")
    # memory: scrapes alone (the traffic above grows the analysis, by design), after as many
    # again to warm up (the allocator's high-water mark: a 9 MiB body is joined per scrape)
    for _ in range(args.scrapes):
        exposition.render()
    gc.collect()
    rss_before = rss_mib()
    for _ in range(args.scrapes * 3):
        exposition.render()
    gc.collect()
    rss_after = rss_mib()
    print(f"slices: {MODELS} models x {len(PROMPTS)} ctx buckets x {len(TASKS)} tasks, K={K}")
    print(f"series: {series:,}, body {len(body) / 1024:.0f} KiB, both outputs identical")
    labels = {
        "unchanged": "specwatch, nothing new since the last scrape",
        "traffic": f"specwatch, {args.rate:g} req/s for 15 s since the last scrape",
        "generate_latest": "prometheus-client generate_latest, same registry",
    }
    medians = {}
    for name, values in times.items():
        values.sort()
        medians[name] = statistics.median(values)
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(
            f"scrape, {labels[name]}: median {medians[name]:.1f} ms, p99 {p99:.1f} ms "
            f"over {len(values)} scrapes (target <= 10 ms)"
        )
    print(
        "ratio generate_latest / specwatch with traffic: "
        f"{medians['generate_latest'] / medians['traffic']:.2f}"
    )
    for name, values in asyncio.run(stalls(exposition, read, traffic, args.stall_rounds)).items():
        print(
            f"event loop's longest stall per scrape after traffic, {name}: median "
            f"{statistics.median(values):.1f} ms, max {max(values):.1f} ms over {len(values)}"
        )
    for rate in (args.rate, args.rate * 10):
        evaluations = evaluation_stalls(analyzer, partial(traffic, False, rate), args.stall_rounds)
        for name, values in asyncio.run(evaluations).items():
            print(
                f"event loop's longest stall per evaluation after {rate:g} req/s for 15 s, "
                f"{name}: median {statistics.median(values):.1f} ms, max {max(values):.1f} ms "
                f"over {len(values)}"
            )
    for name, (counts, longest, total) in collections(traffic, exposition, args.gc_rounds).items():
        print(
            f"cycle collector over {args.gc_rounds} x 10 traffic + scrape cycles, {name}: "
            f"{counts} collections (young, middle, full), longest {longest}, "
            f"{total:.0f} ms in all"
        )
    print(
        f"RSS over {args.scrapes * 3} more scrapes (after {args.scrapes} to warm up): "
        f"{rss_before:.1f} MiB before, "
        f"{rss_after:.1f} MiB after "
        f"(ratio {rss_after / rss_before:.3f})"
    )


if __name__ == "__main__":
    main()
