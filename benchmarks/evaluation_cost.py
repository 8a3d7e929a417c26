"""What one evaluation costs a pod, by the number of slices it judges.

The sidecar evaluates every `zones.evaluation_interval_seconds` (10 s): each slice's windows,
evidence, zone, drift and causes. This feeds an Analyzer traffic that keeps `--slices` slices
busy (two requests per slice every 10 s of log time, each inside one ctx bucket), evaluates
every 10 s of log time as the live sidecar does, and times the evaluations alone (not the
ingest) once the hour-long zone window has filled: the median and p90 milliseconds per
evaluation, and per slice.

    .venv/bin/python benchmarks/evaluation_cost.py [--slices 24 200 1000] [--minutes 70]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from itertools import product

from specwatch.analysis.analyzer import Analyzer
from specwatch.core.logs import configure
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings

TASKS = ("chat", "code", "summarization", "translation", "extraction", "reasoning", "tool_call")
# a prompt inside each default ctx bucket (0-512, 512-2048, ... 32768+), far from its bounds
PROMPTS = (200, 1000, 3000, 6000, 16000, 40000)
EVERY = 10.0  # seconds of log time between evaluations, as zones.evaluation_interval_seconds
K = 4


def cells(slices: int) -> list[tuple[str, int, str]]:
    """The first `slices` (model, prompt, task) triples: as many models as it takes."""
    models = [f"m{i}" for i in range(slices // (len(PROMPTS) * len(TASKS)) + 1)]
    return list(product(models, PROMPTS, TASKS))[:slices]


def run(slices: int, minutes: float, seed: int) -> tuple[list[float], int]:
    rng = random.Random(seed)
    settings = load_settings(limits={"max_models": slices // (len(PROMPTS) * len(TASKS)) + 1})
    analyzer = Analyzer(settings, started=0.0)
    keys = cells(slices)
    timings: list[float] = []
    served = 0
    now = 0.0
    while now < minutes * 60:
        for model, prompt, task in keys:
            for _ in range(2):
                steps = rng.randrange(4, 9)
                accepted = tuple(min(K, int(rng.expovariate(0.7))) for _ in range(steps))
                served += 1
                analyzer.ingest(
                    RequestRecord(
                        ts=now + rng.uniform(0, EVERY),
                        request_id=str(served),
                        model=model,
                        task=task,
                        outcome="observed",
                        prompt_tokens=prompt + rng.randrange(50),
                        completion_tokens=steps * 2,
                        spec=SpecDecodeBlock(K, (K,) * steps, accepted),
                        latency=Latency(ttft=0.05, tpot=0.01, e2e=0.5),
                    )
                )
        now += EVERY
        started = time.perf_counter()
        analyzer.evaluate(now)
        if now > 3600:  # the longest zone window is full: a pod's steady state
            timings.append((time.perf_counter() - started) * 1000)
    judged = len(analyzer.snapshot(now).slices)
    return timings, judged


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slices", type=int, nargs="+", default=[24, 200, 1000])
    parser.add_argument("--minutes", type=float, default=70.0, help="log time; > 60 to time")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    configure("warning", "console")
    print("slices  evaluations  median ms  p90 ms  median ms per slice")
    for slices in args.slices:
        timings, judged = run(slices, args.minutes, args.seed)
        if not timings:
            raise SystemExit("--minutes must be past 60: the evaluations are timed after the hour")
        median = statistics.median(timings)
        p90 = statistics.quantiles(timings, n=10)[-1] if len(timings) >= 10 else max(timings)
        per_slice = median / judged
        print(f"{judged:>6}  {len(timings):>11}  {median:>9.2f}  {p90:>6.2f}  {per_slice:.4f}")


if __name__ == "__main__":
    main()
