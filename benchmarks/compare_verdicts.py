"""What the comparison of two configs covers and how often it is wrong, on overdispersed
requests like real traffic (analysis/compare/alpha.py: the statistics of /status `change`, of the
canary rules and of SpecDecodeCanaryWorse).

Requests as in benchmarks/zone_verdicts.py: 25-50 steps at K = 4, each request's acceptance drawn
around its side's truth with a per-request sd of `--sd` (0.08). A model has 8 slices compared
at once, and its rollup (the family: analysis/compare/alpha.compare_models).

1. One look (`--runs` comparisons of a model, `--requests` (120) a side per slice): coverage of
   the true difference by each slice's interval (95%, and at the family-wise confidence);
   equal configs (0.70 both) called different (`worse` or `better` by any of the model's
   verdicts, its slices' or its rollup's); a drop of 0.05 (0.70 -> 0.65) found (`worse`) per
   slice. `--requests` takes several counts: the drop's power at each.
2. The alert over time: an equal canary (and one 0.05 worse) beside stable for an hour, stable
   with 480 requests a slice-hour and the canary 120, compared every minute over the last 30
   minutes; the alert fires when the difference's upper bound stays below -0.02 for 15
   minutes. Printed: the share of hours in which it never fires (equal), and the median minute
   it fires (worse).

    .venv/bin/python benchmarks/compare_verdicts.py [--runs 400] [--hours 200] [--seed 1]
        [--sd 0.08] [--requests 120 ...]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from specwatch.analysis.compare.alpha import (
    WORSE,
    compare_models,
    compare_slices,
    difference,
    family_confidence,
)
from specwatch.analysis.counting.sums import Sums
from specwatch.sim.truth import mean_for

K, SLICES = 4, 8
SD = 0.08  # per-request sd (--sd)
CONFIDENCE, MARGIN, MIN_TRIALS, MIN_REQUESTS = 0.95, 0.02, 1000, 30


def requests(rng: np.random.Generator, truth: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Accepted tokens and trials of `n` requests whose ratio truth is `truth`."""
    mean = mean_for(truth, SD, K)
    shape = mean * (1 - mean) / SD**2 - 1
    alpha = rng.beta(mean * shape, (1 - mean) * shape, n)
    steps = rng.integers(25, 51, n)
    owner = np.repeat(np.arange(n), steps)
    u = 1.0 - rng.random(owner.size)
    accepted = np.minimum(K, np.floor(np.log(u) / np.log(alpha[owner]))).astype(np.int64)
    trials = accepted + (accepted < K)
    return np.bincount(owner, accepted, n).astype(np.int64), np.bincount(owner, trials, n).astype(
        np.int64
    )


def sums(a: np.ndarray, t: np.ndarray) -> Sums:
    return Sums(len(a), int(a.sum()), int(t.sum()), int((a * a).sum()), int((a * t).sum()),
                int((t * t).sum()))  # fmt: skip


def _total(parts: list[Sums]) -> Sums:
    """A model's sums from its slices' (each request in one slice)."""
    return Sums(*(sum(values) for values in zip(*parts, strict=True)))


def one_look(rng: np.random.Generator, runs: int, requests_a_side: int) -> None:
    print(
        f"1. one look, {SLICES} slices and the rollup a model, {requests_a_side} requests a "
        f"side per slice, per-request sd {SD:g}, {runs} runs"
    )
    for after in (0.70, 0.65):
        covered = covered_family = different = worse = slices = 0
        true_difference = after - 0.70
        for _ in range(runs):
            pairs: list[tuple[tuple[str, ...], Sums, Sums]] = []
            for s in range(SLICES):
                before = sums(*requests(rng, 0.70, requests_a_side))
                later = sums(*requests(rng, after, requests_a_side))
                pairs.append((("m", str(s), "t"), before, later))
            rollup = (
                ("m", "all", "all"),
                _total([p[1] for p in pairs]),
                _total([p[2] for p in pairs]),
            )
            rows, models = compare_models(
                [rollup], pairs, CONFIDENCE, MARGIN, MIN_TRIALS, MIN_REQUESTS
            )
            verdicts = [r.verdict for r in rows] + [m.rollup.verdict for m in models]
            different += any(v in ("worse", "better") for v in verdicts)
            for (_, before, later), row in zip(pairs, rows, strict=True):
                single = difference(before, later, CONFIDENCE)
                assert single is not None
                assert row.difference is not None
                covered += single.lower <= true_difference <= single.upper
                covered_family += row.difference.lower <= true_difference <= row.difference.upper
                worse += row.verdict == WORSE
                slices += 1
        print(
            f"   truth 0.70 -> {after:.2f}: coverage {covered / slices:.3f} (95% interval), "
            f"{covered_family / slices:.3f} (family-wise); a model called different in "
            f"{different / runs:.1%} of runs; slices found worse {worse / slices:.1%}"
        )


def timed(rng: np.random.Generator, truth: float, per_hour: float) -> tuple[np.ndarray, ...]:
    """A slice-hour of requests: their finishing minute, accepted tokens and trials."""
    n = rng.poisson(per_hour)
    a, t = requests(rng, truth, n)
    return np.sort(rng.uniform(0, 60, n)), a, t


def window(side: tuple[np.ndarray, ...], minute: int) -> Sums:
    at, a, t = side
    keep = (at > minute - 30) & (at <= minute)
    return sums(a[keep], t[keep])


def over_time(rng: np.random.Generator, hours: int) -> None:
    print(f"\n2. the alert over an hour, evaluated every minute ({hours} hours a case)")
    for canary in (0.70, 0.65):
        fired_at = []
        for _ in range(hours):
            stable = [timed(rng, 0.70, 480) for _ in range(SLICES)]
            test = [timed(rng, canary, 120) for _ in range(SLICES)]
            below = [0] * SLICES
            first = None
            for minute in range(1, 61):
                pairs = [(("m", str(s), "t"), window(stable[s], minute), window(test[s], minute))
                         for s in range(SLICES)]  # fmt: skip
                rows = compare_slices(pairs, CONFIDENCE, MARGIN, MIN_TRIALS, MIN_REQUESTS)
                for s, row in enumerate(rows):
                    d = row.difference
                    below[s] = below[s] + 1 if d is not None and d.upper < -MARGIN else 0
                if first is None and max(below) >= 15:
                    first = minute
            fired_at.append(first)
        never = sum(f is None for f in fired_at) / hours
        fired = [f for f in fired_at if f is not None]
        when = f", median minute {statistics.median(fired):.0f}" if fired else ""
        print(f"   canary {canary:.2f} beside stable 0.70: never fired in {never:.1%} of hours"
              f" (fired in {len(fired)}{when})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--hours", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sd", type=float, default=0.08)
    parser.add_argument("--requests", type=int, nargs="*", default=[120])
    args = parser.parse_args()
    global SD
    SD = args.sd
    rng = np.random.default_rng(args.seed)
    print(
        f"(family-wise: each of {SLICES} + 1 intervals at "
        f"{family_confidence(CONFIDENCE, SLICES + 1):.5f})"
    )
    for n in args.requests:
        one_look(rng, args.runs, n)
    if args.hours:
        over_time(rng, args.hours)


if __name__ == "__main__":
    main()
