"""Requests, engine samples and analyzers for the analysis tests (test_analyzer, test_turns)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer, Snapshot
from specwatch.core.httpjson import dumps
from specwatch.core.records import EngineSample, Latency, RequestRecord, SpecDecodeBlock
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition
from specwatch.export.reading import Reading
from specwatch.export.status import status_document
from specwatch.settings import load_settings


def record(
    ts: float,
    accepted: tuple[int, ...],
    *,
    model: str = "m",
    task: str = "code",
    prompt: int | None = 100,
    outcome: str = C.Outcome.OBSERVED,
) -> RequestRecord:
    spec = SpecDecodeBlock(3, (3,) * len(accepted), accepted) if accepted else None
    return RequestRecord(
        ts=ts,
        request_id="r",
        model=model,
        task=task,
        outcome=outcome,
        prompt_tokens=prompt,
        completion_tokens=len(accepted) * 2,
        spec=spec,
        latency=Latency(ttft=0.01, tpot=0.002, e2e=0.2),
    )


def k4_record(
    i: int,
    drafted: tuple[int, ...],
    accepted: tuple[int, ...],
    *,
    prompt: int = 100,
    reported_tau: float | None = None,
    **fields: Any,
) -> RequestRecord:
    """Request `i` (at 1.8e9 + i) of model m, task chat: steps of K = 4 drafting `drafted`
    and accepting `accepted` each, every token emitted as one (accepted + 1 a step)."""
    return RequestRecord(
        ts=1.8e9 + i,
        request_id=f"q{i}",
        model="m",
        task="chat",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=prompt,
        completion_tokens=sum(accepted) + len(accepted),
        spec=SpecDecodeBlock(4, drafted, accepted, reported_tau=reported_tau),
        latency=Latency(tpot=0.02),
        **fields,
    )


def analyzer(**overrides: Any) -> Analyzer:
    settings = load_settings(
        **{
            "ctx_buckets": "512,2048",
            "window": {"length_seconds": 60, "bucket_seconds": 10},
            "zones": {"min_trials": 30, "min_requests": 3, "min_dwell_seconds": 0},
            **overrides,
        }
    )
    return Analyzer(settings, started=0.0)


def engine_sample(ts: float, drafts: int, accepted: int, full: int) -> EngineSample:
    return EngineSample(
        ts=ts,
        model="old-vllm",
        drafts=drafts,
        draft_tokens=drafts * 3,
        accepted_tokens=accepted,
        accepted_per_position=(accepted / 2, accepted / 2 - full, full),
        requests=drafts / 10,
    )


# every zone reachable in mixed_traffic, a measured cost and gain from its A/B requests
MIXED_SETTINGS: dict[str, Any] = {
    "speedup": {"cost_ratio": {"m0": 0.6, "m1": 0.6}, "min_baseline_requests": 3},
    # a low bar: windows of a dozen requests still reach every zone
    "zones": {
        "min_trials": 60,
        "min_requests": 6,
        "min_dwell_seconds": 0,
        "slower_seconds": 30,
        "evidence": 1.5,
        "exit_evidence": 0.5,
    },
}


def mixed_traffic(seed: int) -> list[RequestRecord]:
    """Slices going in and out of evidence with acceptance in phases (modelled gains above and
    below 1 at c = 0.6; green, yellow and red), A/B baseline requests that move the measured
    cost and gain, quiet spells and gaps long enough for windows to empty; and a model (m2)
    with rare short speculative requests beside a steady baseline, whose rollup stays
    insufficient while its measured gain (slower: red without the gates) moves with time."""
    rng = random.Random(seed)
    out, ts = [], 0.0
    for _ in range(2000):
        ts += rng.choice((0.2, 1.0, 3.0, 7.0, 15.0)) if rng.random() > 0.01 else 200.0
        model, task = rng.choice(("m0", "m1", "m2")), rng.choice(("code", "chat", "rag"))
        busy = rng.random() < 0.5  # one finer slice has half the traffic: it gets verdicts
        model, task = ("m0", "code") if busy else (model, task)
        baseline = rng.random() < (0.8 if model == "m2" else 0.15)
        alpha = (0.9, 0.55, 0.2)[(int(ts) // 300) % 3]
        steps = 2 if model == "m2" else rng.randrange(2, 12)
        accepted = tuple(sum(rng.random() < alpha for _ in range(3)) for _ in range(steps))
        out.append(
            RequestRecord(
                ts=ts, request_id="r", model=model, task=task, outcome=C.Outcome.OBSERVED,
                prompt_tokens=100 if busy else rng.choice((100, 1000, 3000)),
                completion_tokens=steps * 2,
                spec=None if baseline else SpecDecodeBlock(3, (3,) * steps, accepted),
                latency=Latency(tpot=rng.uniform(0.01, 0.03) * (1.0 if baseline else 1.6)),
                variant=C.VARIANT_BASELINE if baseline else C.VARIANT_SPEC,
            )
        )  # fmt: skip
    return out


def rendered(snapshot: Snapshot) -> tuple[bytes, bytes]:
    """A snapshot as /metrics (a new collector: nothing kept) and /status write it."""
    reading = Reading(snapshot)
    return Exposition(SpecwatchCollector(lambda: reading)).render(), dumps(status_document(reading))


def replay_zone_changes(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`specwatch replay --json` of a cycle log, as a user runs it: its /status document and
    its `zone_changed` events (JSON log lines on stderr)."""
    command = [sys.executable, "-m", "specwatch", "replay", "--json", "--verbose",
               "--log-format", "json", str(path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, check=True)
    events = []
    for line in done.stderr.decode().splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("event") == "zone_changed":
                events.append(event)
    return json.loads(done.stdout), events


def cliff_steps(rng: random.Random, prompt: int, cliff: int | None) -> SpecDecodeBlock:
    """30 steps drafting 4, each position accepted with 0.7 given the one before; from
    context `cliff` on, positions 3 and 4 accept nothing."""
    accepted, position = [], prompt + 1
    for _ in range(30):
        reach = 2 if cliff is not None and position >= cliff else 4
        a = 0
        while a < reach and rng.random() < 0.7:
            a += 1
        accepted.append(a)
        position += a + 1
    return SpecDecodeBlock(4, (4,) * 30, tuple(accepted))
