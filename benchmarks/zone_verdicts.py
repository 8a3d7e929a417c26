"""Zones over hours of continuous evaluation, black box: cycle logs with a known truth replayed
through `specwatch replay --json`, every verdict change read from its `zone_changed` events.

Per cell (layout x per-request sd x requests an hour x truth), two hours of requests arriving
as a Poisson process, 25-50 speculative steps each at K = 4, every request's acceptance drawn
from a Beta with the cell's per-request sd around the mean whose ratio-estimator limit is the
truth (specwatch/sim/truth.py). The replay evaluates every 10 s on the records' clock, as the
sidecar does live: ~720 looks.

- `slices`: 192 slices (4 models x 6 ctx buckets x 8 tasks), each at the cell's rate.
- `rollups`: 48 models of 4 slices (2 ctx buckets x 2 tasks), each model at the cell's rate:
  what the model rollups (`ctx_bucket="all"`) do.

Printed per cell: from a fresh start, the share ever green / ever red within the first hour
and green / red at its end; then in the second hour (every window full, the steady state)
verdict changes (between green, yellow and red) per slice-hour: mean, 95th percentile and
most. Then two changes at minute 30 of a fresh hour (0.80 -> 0.40 and 0.78 -> 0.62) per sd
at 480 an hour: the median minutes until red, and until green is left. `--compare DIR` runs
the same logs through another checkout's agent/ too, side by side.

    .venv/bin/python benchmarks/zone_verdicts.py [--layouts slices rollups] [--sds 0.08 0.15]
        [--per-hour 480 1200] [--truths ...] [--jobs 2] [--compare DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from specwatch.settings import DEFAULT_TASKS
from specwatch.sim.truth import PROMPTS, write_log

START = 1.8e9
HOUR = 3600.0
TRUTHS = (0.69, 0.70, 0.72, 0.48, 0.50, 0.52)
CHANGES = {"0.80 -> 0.40 (red)": (0.80, 0.40), "0.78 -> 0.62 (leaves green)": (0.78, 0.62)}
JUDGED = ("green", "yellow", "red")
LAYOUTS: dict[str, tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...], float, bool]] = {
    # models, prompts, tasks, share of the cell's rate per slice, judge the rollups
    "slices": (tuple(f"m{i}" for i in range(4)), PROMPTS, DEFAULT_TASKS, 1.0, False),
    "rollups": (tuple(f"m{i}" for i in range(48)), PROMPTS[:2], DEFAULT_TASKS[:2], 0.25, True),
}

Key = tuple[str, str, str]


STEPS = (25, 50)  # a request's speculative steps (uniform, inclusive): `--steps`


def write(
    path: Path, layout: str, truth: Callable[[float], float], per_hour: float, sd: float
) -> None:
    models, prompts, tasks, share, _ = LAYOUTS[layout]
    write_log(
        path,
        truth,
        models=models,
        tasks=tasks,
        prompts=prompts,
        per_hour=per_hour * share,
        sd=sd,
        start=START,
        seconds=2 * HOUR,
        steps=STEPS,
    )


def replay(path: Path, agent: Path | None) -> list[dict[str, Any]]:
    """The `zone_changed` events of `specwatch replay --json`."""
    env = dict(os.environ)
    if agent is not None:
        env["PYTHONPATH"] = f"{agent}{os.pathsep}{env.get('PYTHONPATH', '')}"
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
    done = subprocess.run([*command, str(path)], capture_output=True, env=env)
    if done.returncode:
        raise RuntimeError(f"replay failed: {done.stderr.decode()[-2000:]}")
    events = []
    for line in done.stderr.decode().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "zone_changed":
            events.append(event)
    return events


Change = tuple[float, str, str]  # seconds from the start, previous zone, zone


def timelines(events: list[dict[str, Any]], rollups: bool) -> dict[Key, list[Change]]:
    """Per slice (or rollup), its zone changes."""
    out: dict[Key, list[Change]] = defaultdict(list)
    for event in events:
        if (event["ctx_bucket"] == "all") != rollups:
            continue
        key = (event["model"], event["ctx_bucket"], event["task"])
        out[key].append((event["at"] - START, event["previous"], event["zone"]))
    return out


def zone_at(changes: list[Change], t: float) -> str:
    zone = "insufficient"
    for at, _, current in changes:
        if at <= t:
            zone = current
    return zone


def summary(events: list[dict[str, Any]], layout: str) -> dict[str, float]:
    models, prompts, tasks, _, rollups = LAYOUTS[layout]
    keys: list[Key] = (
        [(m, "all", "all") for m in models]
        if rollups
        else [(m, b, t) for m in models for b in _labels(prompts) for t in tasks]
    )
    lines = timelines(events, rollups)
    n = len(keys)
    ever_green = ever_red = end_green = end_red = 0
    changes = []
    for key in keys:
        line = lines.get(key, [])
        first = {current for at, _, current in line if at <= HOUR}
        ever_green += "green" in first
        ever_red += "red" in first
        end = zone_at(line, HOUR)
        end_green += end == "green"
        end_red += end == "red"
        changes.append(
            sum(1 for at, p, c in line if HOUR < at <= 2 * HOUR and p in JUDGED and c in JUDGED)
        )
    changes.sort()
    return {
        "n": n,
        "ever_green": ever_green / n,
        "ever_red": ever_red / n,
        "end_green": end_green / n,
        "end_red": end_red / n,
        "changes": sum(changes) / n,
        "p95": changes[int(0.95 * (n - 1))],
        "most": changes[-1],
    }


def _labels(prompts: tuple[int, ...]) -> list[str]:
    from specwatch.analysis.counting.slicing import CtxBuckets
    from specwatch.settings import load_settings

    buckets = CtxBuckets(load_settings().ctx_buckets)
    return [buckets.label(p + 1) for p in prompts]


def delay(events: list[dict[str, Any]], zone: str, leave: bool, n: int) -> float:
    """Median minutes from the change (minute 30) to the slices' first event into (or out of)
    `zone`; slices that never got there count as never."""
    at = START + HOUR / 2
    first: dict[Key, float] = {}
    for event in events:
        if event["ctx_bucket"] == "all":
            continue
        key = (event["model"], event["ctx_bucket"], event["task"])
        hit = event["previous"] == zone if leave else event["zone"] == zone
        if hit and event["at"] >= at and key not in first:
            first[key] = (event["at"] - at) / 60.0
    return statistics.median(sorted(first.values()) + [float("inf")] * (n - len(first)))


def constant(truth: float) -> Callable[[float], float]:
    return lambda _t: truth


def step(before: float, after: float) -> Callable[[float], float]:
    """`before` until minute 30, `after` from it on."""
    return lambda t: before if t < HOUR / 2 else after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--sds", type=float, nargs="*", default=[0.08, 0.15])
    parser.add_argument("--per-hour", type=float, nargs="*", default=[480.0, 1200.0])
    parser.add_argument("--truths", type=float, nargs="*", default=list(TRUTHS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="replays at once")
    parser.add_argument("--compare", type=Path, help="another checkout's agent/ directory")
    parser.add_argument("--no-changes", action="store_true", help="skip the two changes")
    parser.add_argument(
        "--steps", type=int, nargs=2, default=[25, 50], help="a request's steps, least and most"
    )
    args = parser.parse_args()
    global STEPS
    STEPS = tuple(args.steps)
    builds: list[tuple[str, Path | None]] = [("this build", None)]
    if args.compare:
        builds.append((str(args.compare), args.compare))
    print(
        "| layout | sd | per hour | truth | build | ever green (h1) | ever red (h1) | green at "
        "end (h1) | red at end (h1) | changes/h (h2): mean, p95, most |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(args.jobs) as pool:
        cells = [
            (layout, sd, rate, truth, name, agent)
            for layout in args.layouts
            for sd in args.sds
            for rate in args.per_hour
            for truth in args.truths
            for name, agent in builds
        ]

        def run(cell: tuple[Any, ...]) -> str:
            layout, sd, rate, truth, name, agent = cell
            path = Path(scratch) / f"{layout}-{sd}-{rate}-{truth}-{name.replace('/', '_')}.jsonl"
            write(path, layout, constant(truth), rate, sd)
            s = summary(replay(path, agent), layout)
            path.unlink()
            return (
                f"| {layout} | {sd:g} | {rate:g} | {truth:.2f} | {name} | {s['ever_green']:.1%} | "
                f"{s['ever_red']:.1%} | {s['end_green']:.1%} | {s['end_red']:.1%} | "
                f"{s['changes']:.2f}, {s['p95']:.0f}, {s['most']:.0f} |"
            )

        for line in pool.map(run, cells):
            print(line, flush=True)
        if args.no_changes:
            return
        print("\nchanges at minute 30, 480 requests a slice-hour: median minutes until the verdict")
        n = len(LAYOUTS["slices"][0]) * len(PROMPTS) * len(DEFAULT_TASKS)
        for sd in args.sds:
            for label, (before, after) in CHANGES.items():
                for name, agent in builds:
                    path = Path(scratch) / "change.jsonl"
                    models, prompts, tasks, _, _ = LAYOUTS["slices"]
                    write_log(
                        path,
                        step(before, after),
                        models=models,
                        tasks=tasks,
                        prompts=prompts,
                        per_hour=480.0,
                        sd=sd,
                        start=START,
                        seconds=HOUR,
                    )
                    events = replay(path, agent)
                    red = after < 0.5
                    minutes = delay(events, "red" if red else "green", not red, n)
                    print(f"  sd {sd:g}, {label}, {name}: {minutes:.1f} min", flush=True)


if __name__ == "__main__":
    main()
