"""Analysis throughput and memory: records through slicing, windows and counts.

Feeds 1M requests (about 10 speculative steps each) into the Analyzer in batches, timing only
the ingestion, and reads the resident set size after 100k and after 1M requests: memory must
be bounded by slices, not by requests served. `--read-every N` times, with the ingestion, an
evaluation and a snapshot after every N requests (1000 requests/s: N = 3000 is an evaluation
and a scrape every 3 s), as a live sidecar reads its windows.

    .venv/bin/python benchmarks/analysis_throughput.py [--requests 1000000] [--read-every 3000]
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import time

import psutil
from specwatch.analysis.analyzer import Analyzer
from specwatch.core.logs import configure
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings

TASKS = ("code", "chat", "summarization", "translation", "reasoning")
PROMPTS = (100, 400, 1500, 3000, 6000, 20000, 40000)


def make_batch(rng: random.Random, start: int, size: int, k: int = 4) -> list[RequestRecord]:
    batch = []
    for i in range(start, start + size):
        steps = rng.randrange(6, 15)
        accepted = tuple(min(k, int(rng.expovariate(0.6))) for _ in range(steps))
        batch.append(
            RequestRecord(
                ts=i / 1000.0,  # 1000 requests/s: windows roll over many times
                request_id=str(i),
                model="m" + str(i % 2),
                task=TASKS[i % len(TASKS)],
                outcome="observed",
                prompt_tokens=PROMPTS[rng.randrange(len(PROMPTS))] + rng.randrange(50),
                completion_tokens=steps * 2,
                spec=SpecDecodeBlock(k, (k,) * steps, accepted),
                latency=Latency(ttft=0.05, tpot=0.01, e2e=0.5),
            )
        )
    return batch


def rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--read-every", type=int, default=0, help="requests; 0: no reads timed")
    args = parser.parse_args()
    configure("warning", "console")
    rng = random.Random(1)
    analyzer = Analyzer(load_settings(), started=0.0)
    steps = 0
    busy = 0.0
    rss_at_100k = None
    served = 0
    while served < args.requests:
        batch = make_batch(rng, served, min(args.batch, args.requests - served))
        started = time.perf_counter()
        for i, record in enumerate(batch, start=served + 1):
            analyzer.ingest(record)
            if args.read_every and i % args.read_every == 0:
                analyzer.evaluate(record.ts)
                analyzer.snapshot(record.ts)
        busy += time.perf_counter() - started
        steps += sum(r.spec.steps for r in batch if r.spec)
        served += len(batch)
        if served % 50_000 == 0:
            analyzer.evaluate(served / 1000.0)
        del batch
        if served == 100_000:
            gc.collect()
            rss_at_100k = rss_mib()
            steps_at_100k, busy_at_100k = steps, busy
    gc.collect()
    rss_end = rss_mib()
    snapshot = analyzer.snapshot(served / 1000.0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"requests ingested:        {served:,}")
    print(f"speculative steps:        {steps:,}")
    print(f"slices:                   {len(snapshot.slices)} (+ {len(snapshot.rollups)} rollups)")
    if rss_at_100k is not None:
        print(
            f"first 100k requests:      {steps_at_100k:,} steps in {busy_at_100k:.2f} s "
            f"= {steps_at_100k / busy_at_100k:,.0f} steps/s, "
            f"{100_000 / busy_at_100k:,.0f} requests/s"
        )
        print(f"RSS after 100k requests:  {rss_at_100k:.1f} MiB")
    print(f"all requests:             {steps / busy:,.0f} steps/s, {served / busy:,.0f} requests/s")
    print(f"RSS after {served:,} requests: {rss_end:.1f} MiB (peak {peak:.1f} MiB)")
    if rss_at_100k is not None:
        print(f"RSS ratio 1M / 100k:      {rss_end / rss_at_100k:.3f}")


if __name__ == "__main__":
    main()
