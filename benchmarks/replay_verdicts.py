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
   at a true gain of 1.05 and 0.80; three seeds: uncertainty.py's traffic, replayed here
   through the command instead of in-process. Printed: how many times each model's rollup
   turned red (the `zone_changed` log events) and its zone at the end.

    .venv/bin/python benchmarks/replay_verdicts.py [--seeds 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from specwatch import conventions as C
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import wilson
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import to_line
from uncertainty import K, ab_records, beta, large_sample, request_steps  # beside this file

TASKS = ("code", "chat", "summarization", "translation", "reasoning", "rag", "math", "extraction")


def record(i: int, model: str, task: str, steps: list[int]) -> RequestRecord:
    return RequestRecord(
        ts=1000.0 + i * 0.05, request_id=str(i), model=model, task=task,
        outcome=C.Outcome.OBSERVED, prompt_tokens=200,
        completion_tokens=sum(steps) + len(steps),
        spec=SpecDecodeBlock(K, (K,) * len(steps), tuple(steps)), latency=Latency(tpot=0.02),
    )  # fmt: skip


def replay(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The /status document and the log events of `specwatch replay`."""
    command = [
        sys.executable,
        "-m",
        "specwatch",
        "replay",
        "--json",
        "--verbose",
        "--log-format",
        "json",
    ]
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
        target = large_sample(np.random.default_rng(99), mean, sd)
        covered, green, widths, wilsons = [], [], [], []
        for seed in range(1, seeds + 1):
            rng = np.random.default_rng(seed)
            path = directory / f"coverage-sd{sd}-seed{seed}.jsonl"
            with path.open("wb") as handle:
                i = 0
                for m in range(8):
                    for task in TASKS:
                        counts = Counts(K)
                        for alpha in beta(rng, mean, sd, 40):
                            steps = request_steps(rng, alpha, int(rng.integers(25, 51)))
                            counts.merge(Counts.of_request([K] * len(steps), steps, K))
                            i += 1
                            handle.write(to_line(record(i, f"m{m}", task, steps)))
                        lower, upper = wilson(counts.accepted, counts.trials)
                        wilsons.append(upper - lower)
            document, _ = replay(path)
            for row in document["slices"]:
                alpha_hat = row["alpha"]
                covered.append(alpha_hat["lower"] <= target <= alpha_hat["upper"])
                green.append(row["zone"] == C.Zone.GREEN)
                widths.append(alpha_hat["upper"] - alpha_hat["lower"])
        print(
            f"per-request sd {sd}: truth {target:.4f}, {len(covered)} slices: coverage "
            f"{np.mean(covered):.3f}, judged green {np.mean(green):.3f}, median width "
            f"{np.median(widths):.4f} = {np.median(widths) / np.median(wilsons):.2f}x Wilson's"
        )


def gain(directory: Path, seeds: int) -> None:
    models = [f"m{m}" for m in range(4)]
    for true_gain in (1.05, 0.80):
        for seed in range(1, seeds + 1):
            path = directory / f"gain-{true_gain}-seed{seed}.jsonl"
            path.write_bytes(b"".join(map(to_line, ab_records(seed, true_gain))))
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
