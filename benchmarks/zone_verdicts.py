"""Zones over an hour of continuous evaluation, black box: cycle logs with a known truth replayed
through `specwatch replay --json`, every verdict change read from its `zone_changed` events.

Per truth, 192 slices (4 models x 6 context buckets x 8 tasks), each an hour of requests
arriving as a Poisson process (480 an hour by default: ~40 per 5-minute window), 25-50
speculative steps each at K = 4, every request's acceptance drawn from a Beta with a per-request
sd of 0.08 around the mean whose ratio-estimator limit is the truth (specwatch/sim/truth.py).
The replay evaluates every 10 s on the records' clock, as the sidecar does live: ~360 looks.

Printed per truth: the share of slices ever green / ever red during the hour, green / red at
the end, and verdict changes per slice-hour (between green, yellow and red). Then two changes
at minute 30 (0.80 -> 0.40 and 0.78 -> 0.62): the median minutes until red, and until green
is left. `--compare DIR` runs the same logs through another checkout's agent/ too (e.g. the
commit before a change to the zone rules), side by side.

    .venv/bin/python benchmarks/zone_verdicts.py [--slices-per-hour 480] [--compare DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specwatch.settings import DEFAULT_TASKS
from specwatch.sim.truth import PROMPTS, verdicts, write_log

START = 1.8e9
MODELS = ("m0", "m1", "m2", "m3")
TRUTHS = (0.69, 0.70, 0.72, 0.48, 0.50, 0.52)
CHANGES = {"0.80 -> 0.40 (red)": (0.80, 0.40), "0.78 -> 0.62 (leaves green)": (0.78, 0.62)}

Slice = tuple[str, str, str]


def write(path: Path, truth: Callable[[float], float], per_hour: float, seed: int) -> None:
    write_log(
        path, truth, models=MODELS, tasks=DEFAULT_TASKS, per_hour=per_hour, start=START, seed=seed
    )


CONFIG: list[str] = []  # `--config FILE` for every replay, when given


def replay(path: Path, agent: Path | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The /status document and the `zone_changed` events of `specwatch replay`."""
    env = dict(os.environ)
    if agent is not None:
        env["PYTHONPATH"] = f"{agent}{os.pathsep}{env.get('PYTHONPATH', '')}"
    command = [sys.executable, "-m", "specwatch", "replay", "--json", "--log-format", "json"]
    done = subprocess.run([*command, *CONFIG, str(path)], capture_output=True, check=True, env=env)
    events = []
    for line in done.stderr.decode().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "zone_changed" and event.get("ctx_bucket") != "all":
            events.append(event)
    return json.loads(done.stdout), events


def delays(events: list[dict[str, Any]], change_at: float, zone: str, leave: bool) -> float | None:
    """Median minutes from the change to the slices' first event into (or out of) `zone`;
    None for a build whose events do not say when (no `at`)."""
    first: dict[Slice, float] = {}
    if any("at" not in event for event in events):
        return None
    for event in events:
        key = (event["model"], event["ctx_bucket"], event["task"])
        hit = event["previous"] == zone if leave else event["zone"] == zone
        if hit and event["at"] >= change_at and key not in first:
            first[key] = (event["at"] - change_at) / 60.0
    missing = len(MODELS) * len(PROMPTS) * len(DEFAULT_TASKS) - len(first)
    values = sorted(first.values()) + [float("inf")] * missing
    return statistics.median(values)


def constant(truth: float) -> Callable[[float], float]:
    return lambda _t: truth


def change(before: float, after: float, at: float) -> Callable[[float], float]:
    return lambda t: before if t < at else after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices-per-hour", type=float, default=480.0, dest="per_hour")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compare", type=Path, help="another checkout's agent/ directory")
    parser.add_argument("--truths", type=float, nargs="*", default=TRUTHS)
    parser.add_argument("--no-changes", action="store_true", help="skip the two changes")
    parser.add_argument("--config", type=Path, help="settings for every replay (YAML)")
    args = parser.parse_args()
    if args.config:
        CONFIG.extend(["--config", str(args.config)])
    builds: list[tuple[str, Path | None]] = [("this build", None)]
    if args.compare:
        builds.append((f"{args.compare}", args.compare))
    print(f"{args.per_hour:g} requests per slice-hour, per-request sd 0.08, 192 slices a truth")
    print(
        "| truth | build | ever green | ever red | green at end | red at end | changes/slice-h "
        "| median minute of the first green / red |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for truth in args.truths:
            path = Path(scratch) / f"truth-{truth}.jsonl"
            write(path, constant(truth), args.per_hour, args.seed)
            for name, agent in builds:
                document, events = replay(path, agent)
                s = verdicts(document, events)
                firsts = [delays(events, START, zone, False) for zone in ("green", "red")]
                first = " / ".join("-" if f is None else f"{f:.1f}" for f in firsts)
                print(
                    f"| {truth:.2f} | {name} | {s['ever_green']:.1%} | {s['ever_red']:.1%} | "
                    f"{s['end_green']:.1%} | {s['end_red']:.1%} | {s['changes']:.2f} | {first} |",
                    flush=True,
                )
        if args.no_changes:
            return
        print("\nchanges at minute 30: median minutes until the verdict follows")
        for label, (before, after) in CHANGES.items():
            path = Path(scratch) / "change.jsonl"
            write(path, change(before, after, 1800.0), args.per_hour, args.seed)
            for name, agent in builds:
                _, events = replay(path, agent)
                at = START + 1800.0
                red, left = delays(events, at, "red", False), delays(events, at, "green", True)
                shown = red if after < 0.5 else left
                text = "n/a (its zone_changed has no `at`)" if shown is None else f"{shown:.1f} min"
                print(f"  {label}, {name}: {text}", flush=True)


if __name__ == "__main__":
    main()
