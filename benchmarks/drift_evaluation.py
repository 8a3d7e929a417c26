"""Drift detection on realistic streams: false alarms a week and detection delays.

Simulated slice streams at a given speculative-step rate (50 steps/s by default), K = 4,
overdispersed like real traffic: every request has its own alpha around the slice mean (sd
0.08), and in one minute out of ten a burst of correlated requests shares an extra offset.
specwatch's detector (1-minute buckets, the default settings) and river's ADWIN and
PageHinkley (fed one value per request: its accepted / trials) run on the same streams:

- false alarms over one stationary week per seed;
- detection delay after a drop of 0.03, 0.05 and 0.10 in alpha, which starts after seven hours
  of stationary traffic (specwatch needs a 6-hour baseline ending 30 minutes back).

    .venv/bin/pip install river numpy   # benchmark-only dependencies (pip install -e '.[bench]')
    .venv/bin/python benchmarks/drift_evaluation.py [--seeds 3] [--steps-per-second 50]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator

import numpy as np
from river import drift as river_drift
from specwatch.analysis.drift import DriftDetector
from specwatch.logs import configure
from specwatch.model import SliceKey
from specwatch.settings import DriftSettings

K = 4
STEPS_PER_REQUEST = 15
KEY = SliceKey("m", "0-512", "code")
WEEK_MINUTES = 7 * 24 * 60


def minutes(
    rng: np.random.Generator, alpha_of: list[float], steps_per_minute: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per minute: accepted and trials of each request."""
    requests = max(1, steps_per_minute // STEPS_PER_REQUEST)
    for mean in alpha_of:
        alphas = mean + rng.normal(0.0, 0.08, requests)
        if rng.random() < 0.1:  # a burst: correlated requests share an offset
            burst = rng.random(requests) < 0.3
            alphas[burst] += rng.normal(0.0, 0.08)
        alphas = np.clip(alphas, 0.02, 0.98)
        per_step_alpha = np.repeat(alphas, STEPS_PER_REQUEST)
        draws = rng.random((per_step_alpha.size, K)) < per_step_alpha[:, None]
        accepted_per_step = np.cumprod(draws, axis=1).sum(axis=1)
        trials_per_step = accepted_per_step + (accepted_per_step < K)
        accepted = accepted_per_step.reshape(requests, STEPS_PER_REQUEST).sum(axis=1)
        trials = trials_per_step.reshape(requests, STEPS_PER_REQUEST).sum(axis=1)
        yield accepted, trials


def run(alpha_of: list[float], seed: int, steps_per_minute: int) -> dict[str, list[int]]:
    """The minutes at which each detector raised an alarm."""
    rng = np.random.default_rng(seed)
    ours = DriftDetector(DriftSettings())
    adwin = river_drift.ADWIN()
    page_hinkley = river_drift.PageHinkley(mode="down")
    alarms: dict[str, list[int]] = {"specwatch": [], "ADWIN": [], "PageHinkley": []}
    raised = 0
    for minute, (accepted, trials) in enumerate(minutes(rng, alpha_of, steps_per_minute)):
        ours.add(KEY, minute * 60.0 + 1.0, int(accepted.sum()), int(trials.sum()))
        ours.evaluate((minute + 1) * 60.0 + 1.0)
        view = ours.view(KEY)
        if view is not None and view.alarms_raised > raised:
            raised = view.alarms_raised
            alarms["specwatch"].append(minute)
        for value in (accepted / trials).tolist():
            adwin.update(value)
            if adwin.drift_detected:
                alarms["ADWIN"].append(minute)
            page_hinkley.update(value)
            if page_hinkley.drift_detected:
                alarms["PageHinkley"].append(minute)
    return alarms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps-per-second", type=int, default=50)
    parser.add_argument("--alpha", type=float, default=0.7)
    args = parser.parse_args()
    configure("error", "console")
    per_minute = args.steps_per_second * 60
    names = ("specwatch", "ADWIN", "PageHinkley")

    print(f"stream: alpha {args.alpha}, {args.steps_per_second} steps/s, K={K}, overdispersed")
    false_alarms: dict[str, list[int]] = {name: [] for name in names}
    for seed in range(args.seeds):
        alarms = run([args.alpha] * WEEK_MINUTES, seed, per_minute)
        for name in names:
            false_alarms[name].append(len(alarms[name]))
    print(f"\nfalse alarms per stationary week ({args.seeds} seeds, one slice):")
    for name in names:
        values = false_alarms[name]
        print(f"  {name:12} mean {statistics.mean(values):8.1f}   per seed {values}")

    start, after = 7 * 60, 120
    print(
        f"\ndetection delay, minutes after the drop ({args.seeds} seeds; '-' = missed in {after}):"
    )
    print(f"  {'drop':>6}  " + "  ".join(f"{name:>22}" for name in names))
    for drop in (0.03, 0.05, 0.10):
        alpha_of = [args.alpha] * start + [args.alpha - drop] * after
        delays: dict[str, list[str]] = {name: [] for name in names}
        for seed in range(args.seeds):
            alarms = run(alpha_of, 1000 + seed, per_minute)
            for name in names:
                hits = [m - start for m in alarms[name] if m >= start]
                delays[name].append(str(hits[0]) if hits else "-")
        cells = "  ".join(f"{','.join(delays[name]):>22}" for name in names)
        print(f"  {drop:6.2f}  {cells}")


if __name__ == "__main__":
    main()
