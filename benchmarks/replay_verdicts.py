"""Verdicts on overdispersed traffic, black box: cycle logs with a known truth, replayed through
`specwatch replay --json` as a user would, then the slices' intervals and zones checked.

1. Coverage and zones. 64 slices per log (8 models x 8 tasks, ctx bucket 0-512), 40 requests
   of 25-50 steps each at K = 4 inside one 5-minute window; every request's acceptance drawn
   from a Beta (mean 0.68, sd 0.08; large-sample truth of the ratio 0.69, below green's 0.70)
   or identical (0.69, sd 0); three seeds each. Printed: how often [lower, upper] covers the
   truth, the share of slices judged green, and the median width beside the token-level
   Wilson interval on the same (accepted, trials).
2. The measured gain. Two hours of 4 models with A/B baseline records (124 requests per model
   per 5 minutes, 24 of them baseline; time per output token lognormal, sd 0.3; acceptance 0.8)
   at a true gain of 1.05 and 0.80; three seeds. Printed: how many times each model's rollup
   turned red (the `zone_changed` log events) and its zone at the end.

    .venv/bin/python benchmarks/replay_verdicts.py [--seeds 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from specwatch import conventions as C
from specwatch.model import Latency, RequestRecord, SpecDecodeBlock
from specwatch.sources.cyclelog import to_line

K = 4
TASKS = ("code", "chat", "summarization", "translation", "reasoning", "rag", "math", "extraction")


def beta(rng: np.random.Generator, mean: float, sd: float) -> float:
    if sd == 0:
        return mean
    c = mean * (1 - mean) / (sd * sd) - 1
    return float(rng.beta(mean * c, (1 - mean) * c))


def accepted_steps(rng: np.random.Generator, p: float, steps: int) -> tuple[int, ...]:
    """Each step accepts its draft positions in turn with probability p, up to K."""
    out = []
    for _ in range(steps):
        a = 0
        while a < K and rng.random() < p:
            a += 1
        out.append(a)
    return tuple(out)


def truth(mean: float, sd: float) -> float:
    """E[accepted per step] / E[trials per step] over requests: the ratio's limit."""
    rng = np.random.default_rng(99)
    n = 400_000
    p = np.array([beta(rng, mean, sd) for _ in range(n)]) if sd else np.full(n, mean)
    accepted = sum(p**i for i in range(1, K + 1))
    return float(accepted.mean() / (accepted + 1 - p**K).mean())


def wilson(accepted: int, trials: int, z: float = 1.959964) -> float:
    """The token-level Wilson interval's width."""
    p, d = accepted / trials, 1 + z * z / trials
    return 2 * z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / d


def record(i: int, ts: float, model: str, task: str, steps: tuple[int, ...] | None,
           tpot: float, variant: str) -> RequestRecord:  # fmt: skip
    return RequestRecord(
        ts=ts, request_id=str(i), model=model, task=task, outcome=C.Outcome.OBSERVED,
        prompt_tokens=200, completion_tokens=100 if steps is None else sum(steps) + len(steps),
        spec=None if steps is None else SpecDecodeBlock(K, (K,) * len(steps), steps),
        latency=Latency(tpot=tpot), variant=variant,
    )  # fmt: skip


def replay(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The /status document and the log events of `specwatch replay`."""
    command = [sys.executable, "-m", "specwatch", "replay", "--json", "--log-format", "json"]
    done = subprocess.run([*command, str(path)], capture_output=True, check=True)
    events = []
    for line in done.stderr.decode().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return json.loads(done.stdout), events


def coverage(directory: Path, seeds: int) -> None:
    for mean, sd in ((0.68, 0.08), (0.69, 0.0)):
        target = truth(mean, sd)
        covered, green, widths, wilsons = [], [], [], []
        for seed in range(1, seeds + 1):
            rng = np.random.default_rng(seed)
            path = directory / f"coverage-sd{sd}-seed{seed}.jsonl"
            with path.open("wb") as handle:
                i = 0
                for m in range(8):
                    for task in TASKS:
                        accepted = trials = 0
                        for _ in range(40):
                            steps = accepted_steps(rng, beta(rng, mean, sd), rng.integers(25, 51))
                            accepted += sum(steps)
                            trials += sum(steps) + sum(1 for a in steps if a < K)
                            i += 1
                            handle.write(to_line(record(i, 1000.0 + i * 0.05, f"m{m}", task,
                                                        steps, 0.02, C.VARIANT_SPEC)))  # fmt: skip
                        wilsons.append(wilson(accepted, trials))
            document, _ = replay(path)
            for row in document["slices"]:
                alpha = row["alpha"]
                covered.append(alpha["lower"] <= target <= alpha["upper"])
                green.append(row["zone"] == C.Zone.GREEN)
                widths.append(alpha["upper"] - alpha["lower"])
        print(
            f"per-request sd {sd}: truth {target:.4f}, {len(covered)} slices: coverage "
            f"{np.mean(covered):.3f}, judged green {np.mean(green):.3f}, median width "
            f"{np.median(widths):.4f} = {np.median(widths) / np.median(wilsons):.2f}x Wilson's"
        )


def gain(directory: Path, seeds: int) -> None:
    models = [f"m{m}" for m in range(4)]
    for true_gain in (1.05, 0.80):
        for seed in range(1, seeds + 1):
            rng = np.random.default_rng(seed)
            records = []
            for model in models:
                for block in range(24):  # 2 hours of 5 minutes
                    for j in range(124):
                        ts = 1000.0 + block * 300 + rng.uniform(0, 300)
                        tpot = 0.03 * rng.lognormal(0, 0.3)
                        if j < 24:
                            records.append(record(len(records), ts, model, "chat", None, tpot,
                                                  C.VARIANT_BASELINE))  # fmt: skip
                        else:
                            steps = accepted_steps(rng, 0.8, rng.integers(25, 51))
                            records.append(record(len(records), ts, model, "chat", steps,
                                                  tpot / true_gain, C.VARIANT_SPEC))  # fmt: skip
            records.sort(key=lambda r: r.ts)
            path = directory / f"gain-{true_gain}-seed{seed}.jsonl"
            path.write_bytes(b"".join(map(to_line, records)))
            document, events = replay(path)
            red_turns = dict.fromkeys(models, 0)
            for event in events:
                rollup = event.get("ctx_bucket") == C.ALL and event.get("task") == C.ALL
                if event.get("event") == "zone_changed" and rollup and event["zone"] == "red":
                    red_turns[event["model"]] += 1
            final = {row["model"]: row["zone"] for row in document["models"]}
            print(
                f"true gain {true_gain}, seed {seed}: turned red {list(red_turns.values())} "
                f"times, zones at the end {[final[m] for m in models]}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the cycle logs here (else a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        coverage(directory, args.seeds)
        gain(directory, args.seeds)


if __name__ == "__main__":
    main()
