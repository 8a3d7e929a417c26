"""Drift detection on realistic streams, like for like: false alarms a week, then delays.

Simulated slice streams at 50 speculative steps/s (by default), K = 4, overdispersed like real
traffic: every request has its own alpha around the slice mean (sd 0.08), and in one minute out
of ten a burst of correlated requests shares an extra offset. Two backgrounds:

- stationary: the slice mean is constant;
- wander: the slice's minute-level mean wanders slowly, AR(1) with rho 0.95 per minute and
  stationary sd 0.015 (what a slice's traffic does as its prompts drift over the day);
- sparse: a quiet slice, stationary, with 3 requests a minute (Poisson) of lengths that vary
  like real completions (log-normal, median 15 steps, sigma 1): a bucket may hold one long
  request, or none.

Every detector gets the same input: the slice's 1-minute buckets. specwatch's detector gets
each bucket's (accepted, trials); river's ADWIN and PageHinkley get each bucket's alpha-hat
(one value a minute). river's thresholds are set so that each raises the same number of false
alarms per stationary week as specwatch's target (`--target`, 1 per slice-week), on calibration
streams of their own seeds; ADWIN is two-sided, so only its downward detections count. Then,
on fresh seeds: false alarms per week in both backgrounds, and the delay after a drop of 0.03,
0.05 and 0.10 that starts after seven hours (specwatch needs a 6-hour baseline ending 30
minutes back), in both backgrounds.

    .venv/bin/pip install -e '.[bench]'     # river and numpy
    .venv/bin/python benchmarks/drift_evaluation.py [--seeds 5] [--steps-per-second 50]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from river import drift as river_drift
from specwatch.analysis.drift.detector import DriftDetector
from specwatch.core.logs import configure
from specwatch.core.records import SliceKey
from specwatch.settings import DriftSettings

K = 4
STEPS_PER_REQUEST = 15
KEY = SliceKey("m", "0-512", "code")
WEEK_MINUTES = 7 * 24 * 60
WANDER_RHO, WANDER_SD = 0.95, 0.015
DROP_AT, AFTER = 7 * 60, 120
DROPS = (0.03, 0.05, 0.10)

Buckets = list[tuple[int, int, int, int]]  # (accepted, trials, sum of steps^2, steps) a minute
SPARSE_REQUESTS = 3.0  # a minute, in the sparse background


def stream(seed: int, minutes: int, alpha: float, steps_per_minute: int, wander: bool,
           drop: float = 0.0, sparse: bool = False) -> Buckets:  # fmt: skip
    """Per minute, the slice's (accepted, trials, squares, steps); a drop of `drop` from
    minute DROP_AT on."""
    rng = np.random.default_rng(seed)
    dense = max(1, steps_per_minute // STEPS_PER_REQUEST)
    level = 0.0
    innovation = WANDER_SD * math.sqrt(1.0 - WANDER_RHO**2)
    out = []
    for minute in range(minutes):
        if wander:
            level = WANDER_RHO * level + rng.normal(0.0, innovation)
        mean = alpha + level - (drop if minute >= DROP_AT else 0.0)
        requests = rng.poisson(SPARSE_REQUESTS) if sparse else dense
        lengths = (
            np.maximum(1, rng.lognormal(math.log(STEPS_PER_REQUEST), 1.0, requests).astype(int))
            if sparse
            else np.full(requests, STEPS_PER_REQUEST)
        )
        alphas = mean + rng.normal(0.0, 0.08, requests)
        if rng.random() < 0.1:  # a burst: correlated requests share an offset
            burst = rng.random(requests) < 0.3
            alphas[burst] += rng.normal(0.0, 0.08)
        alphas = np.clip(alphas, 0.02, 0.98)
        per_step = np.repeat(alphas, lengths)
        draws = rng.random((per_step.size, K)) < per_step[:, None]
        accepted = np.cumprod(draws, axis=1).sum(axis=1)
        trials = accepted + (accepted < K)
        squares = int((lengths.astype(np.int64) ** 2).sum())  # the requests' steps squared
        out.append((int(accepted.sum()), int(trials.sum()), squares, int(per_step.size)))
    return out


Detector = Callable[[Buckets], list[int]]  # the minutes at which alarms started


def specwatch(buckets: Buckets) -> list[int]:
    detector = DriftDetector(DriftSettings())
    alarms, raised = [], 0
    for minute, (accepted, trials, squares, steps) in enumerate(buckets):
        if trials:
            detector.add(KEY, minute * 60.0 + 1.0, accepted, trials, steps, squares)
        detector.evaluate((minute + 1) * 60.0 + 1.0)
        view = detector.view(KEY)
        if view is not None and view.alarms_raised > raised:
            raised = view.alarms_raised
            alarms.append(minute)
    return alarms


def adwin(delta: float) -> Detector:
    def run(buckets: Buckets) -> list[int]:
        detector = river_drift.ADWIN(delta=delta, clock=1)  # check at every bucket
        alarms = []
        for minute, (accepted, trials, _, _) in enumerate(buckets):
            if not trials:
                continue  # an empty minute has no alpha-hat
            before = detector.estimation
            detector.update(accepted / trials)
            if detector.drift_detected and detector.estimation < before:  # downward only
                alarms.append(minute)
        return alarms

    return run


def page_hinkley(threshold: float) -> Detector:
    def run(buckets: Buckets) -> list[int]:
        detector = river_drift.PageHinkley(threshold=threshold, mode="down")
        alarms = []
        for minute, (accepted, trials, _, _) in enumerate(buckets):
            if not trials:
                continue
            detector.update(accepted / trials)
            if detector.drift_detected:
                alarms.append(minute)
        return alarms

    return run


@dataclass
class Streams:
    alpha: float
    steps_per_minute: int

    def week(self, seed: int, wander: bool, sparse: bool = False) -> Buckets:
        return stream(seed, WEEK_MINUTES, self.alpha, self.steps_per_minute, wander,
                      sparse=sparse)  # fmt: skip

    def dropped(self, seed: int, wander: bool, drop: float) -> Buckets:
        return stream(seed, DROP_AT + AFTER, self.alpha, self.steps_per_minute, wander, drop)


def calibrate(make: Callable[[float], Detector], weeks: list[Buckets], target: float,
              low: float, high: float, log_scale: bool) -> float:  # fmt: skip
    """The parameter between low and high (more alarms at `high`) whose false alarms per week
    on `weeks` come closest to `target`, by bisection."""

    def rate(parameter: float) -> float:
        return statistics.mean(len(make(parameter)(week)) for week in weeks)

    for _ in range(14):
        mid = math.sqrt(low * high) if log_scale else (low + high) / 2.0
        if rate(mid) > target:
            high = mid
        else:
            low = mid
    return low  # the side with at most `target` alarms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--calibration-weeks", type=int, default=4)
    parser.add_argument("--steps-per-second", type=int, default=50)
    parser.add_argument("--alpha", type=float, default=0.7)
    parser.add_argument("--target", type=float, default=1.0, help="false alarms per week")
    args = parser.parse_args()
    configure("error", "console")
    streams = Streams(args.alpha, args.steps_per_second * 60)
    print(f"streams: alpha {args.alpha}, {args.steps_per_second} steps/s, K={K}, per-request sd"
          f" 0.08 with bursts; wander: AR(1) rho {WANDER_RHO}, sd {WANDER_SD}; sparse:"
          f" {SPARSE_REQUESTS:g} requests a minute, log-normal lengths")  # fmt: skip

    calibration = [streams.week(10_000 + i, wander=False) for i in range(args.calibration_weeks)]
    # ADWIN: fewer alarms at a smaller delta; PageHinkley: fewer at a larger threshold (here
    # its inverse, so that both bisections move the same way).
    delta = calibrate(adwin, calibration, args.target, 1e-12, 0.99, log_scale=True)
    inverse = calibrate(lambda x: page_hinkley(1.0 / x), calibration, args.target, 0.01, 1e4,
                        log_scale=True)  # fmt: skip
    detectors: dict[str, Detector] = {
        "specwatch": specwatch,
        f"ADWIN (delta {delta:.2g})": adwin(delta),
        f"PageHinkley (threshold {1.0 / inverse:.3g})": page_hinkley(1.0 / inverse),
    }
    print(f"river calibrated to {args.target:g} false alarm(s) per stationary week on "
          f"{args.calibration_weeks} weeks of other seeds; specwatch at its defaults")  # fmt: skip

    print(f"\nfalse alarms per slice-week ({args.seeds} seeds, mean (per seed)):")
    print("| detector | stationary | wander | sparse |\n|---|---|---|---|")
    backgrounds = {"stationary": (False, False), "wander": (True, False), "sparse": (False, True)}
    weeks = {
        name: [streams.week(s, wander=w, sparse=sp) for s in range(args.seeds)]
        for name, (w, sp) in backgrounds.items()
    }
    for name, detector in detectors.items():
        cells = []
        for background in backgrounds:
            counts = [len(detector(week)) for week in weeks[background]]
            cells.append(f"{statistics.mean(counts):.1f} ({', '.join(map(str, counts))})")
        print(f"| {name} | " + " | ".join(cells) + " |")

    print(f"\ndetection delay, minutes after the drop ({args.seeds} seeds; '-' = missed in "
          f"{AFTER} min; an alarm before the drop counts as missed):")  # fmt: skip
    header = " | ".join(f"{d:.2f} {bg}" for bg in ("stationary", "wander") for d in DROPS)
    print(f"| detector | {header} |\n|---|" + "---|" * (2 * len(DROPS)))
    dropped = {
        (wander, drop): [streams.dropped(1000 + s, wander, drop) for s in range(args.seeds)]
        for wander in (False, True)
        for drop in DROPS
    }
    for name, detector in detectors.items():
        cells = []
        for wander in (False, True):
            for drop in DROPS:
                delays = []
                for buckets in dropped[wander, drop]:
                    alarms = detector(buckets)
                    early = any(m < DROP_AT for m in alarms)
                    hits = [m - DROP_AT for m in alarms if m >= DROP_AT]
                    delays.append("-" if early or not hits else str(hits[0]))
                cells.append(",".join(delays))
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
