"""What specwatch's intervals cover, and what its verdicts get wrong, on overdispersed requests.

Slices of requests whose own acceptance is drawn from a Beta around the slice's mean with a
per-request sd of 0, 0.05, 0.08 or 0.15 (real vLLM captures: see tests/fixtures), 30 or 100
requests per window, 25-50 speculative steps each at K = 4, every step's draft positions
accepted in turn with the request's probability. The truth is the ratio estimator's large-sample
limit (E[accepted per step] / E[trials per step] over requests). For each cell:

- coverage of the truth by the 95% interval: the token-level Wilson interval on (accepted,
  trials) that specwatch used before, and the request-level interval it uses now;
- zone confusion: the share of slices whose first verdict (green when the lower bound reaches
  0.70, red when the upper bound is below 0.50, yellow between) differs from the truth's zone,
  for truths 0.45 (red), 0.60 and 0.69 (yellow) and 0.80 (green), with either interval.

Then the measured gain: two hours of A/B replayed through the analysis (4 models, 100
speculative and 24 baseline requests per 5 minutes each, time per output token lognormal with
sd 0.3, acceptance 0.8): red turns per model when the true gain is 1.05, and the final zone
when it is 0.80 (speculation slower).

    .venv/bin/python benchmarks/uncertainty.py [--runs 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter

import numpy as np
import structlog
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import SliceStats, wilson
from specwatch.core.logs import configure
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings

K = 4
SDS = (0.0, 0.05, 0.08, 0.15)
SIZES = (30, 100)
TRUTHS = (0.45, 0.60, 0.69, 0.80)
GREEN, RED = 0.70, 0.50


def beta(rng: np.random.Generator, mean: float, sd: float, n: int) -> np.ndarray:
    if sd <= 0:
        return np.full(n, mean)
    shape = mean * (1 - mean) / sd**2 - 1
    return rng.beta(mean * shape, (1 - mean) * shape, n)


def large_sample(rng: np.random.Generator, mean: float, sd: float) -> float:
    alphas = beta(rng, mean, sd, 400_000)
    accepted = np.sum([alphas**i for i in range(1, K + 1)], axis=0)
    return float(accepted.mean() / (accepted + 1 - alphas**K).mean())


def mean_for(rng: np.random.Generator, truth: float, sd: float) -> float:
    """The Beta mean whose ratio-estimator limit is `truth` (bisection)."""
    low, high = 0.05, 0.95
    for _ in range(30):
        mid = (low + high) / 2
        if large_sample(rng, mid, sd) < truth:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def request_steps(rng: np.random.Generator, alpha: float, steps: int) -> list[int]:
    """Tokens accepted per step: each step's draft positions accepted in turn with `alpha`."""
    accepted: list[int] = np.cumprod(rng.random((steps, K)) < alpha, axis=1).sum(axis=1).tolist()
    return accepted


def slice_counts(rng: np.random.Generator, mean: float, sd: float, requests: int) -> Counts:
    total = Counts(K)
    for alpha in beta(rng, mean, sd, requests):
        steps = int(rng.integers(25, 51))
        total.merge(Counts.of_request([K] * steps, request_steps(rng, alpha, steps), K))
    return total


def zone(lower: float, upper: float) -> str:
    return "green" if lower >= GREEN else "red" if upper < RED else "yellow"


def true_zone(truth: float) -> str:
    return "green" if truth >= GREEN else "red" if truth < RED else "yellow"


def intervals(counts: Counts) -> tuple[tuple[float, float], tuple[float, float]]:
    alpha = SliceStats.of(counts, 0.95).alpha
    assert alpha is not None
    return wilson(counts.accepted, counts.trials), (alpha.lower, alpha.upper)


def coverage_table(rng: np.random.Generator, runs: int) -> None:
    print("coverage of the truth by the 95% interval (alpha 0.69), token-level Wilson -> "
          "request-level; median width ratio request-level / Wilson")  # fmt: skip
    print("| per-request sd | requests per window | Wilson | request-level | width ratio |")
    print("|---|---|---|---|---|")
    for sd in SDS:
        mean = mean_for(rng, 0.69, sd)
        truth = large_sample(rng, mean, sd)
        for size in SIZES:
            token = robust = 0
            ratios = []
            for _ in range(runs):
                (wl, wu), (rl, ru) = intervals(slice_counts(rng, mean, sd, size))
                token += wl <= truth <= wu
                robust += rl <= truth <= ru
                ratios.append((ru - rl) / (wu - wl))
            print(f"| {sd:g} | {size} | {token / runs:.3f} | {robust / runs:.3f} | "
                  f"{statistics.median(ratios):.2f} |")  # fmt: skip


def confusion_table(rng: np.random.Generator, runs: int) -> None:
    print("\nzone confusion: share of slices whose first verdict is not the truth's zone "
          "(Wilson -> request-level), and the worst kind")  # fmt: skip
    head = " | ".join(f"truth {t:g} ({true_zone(t)})" for t in TRUTHS)
    print(f"| per-request sd | requests | {head} |\n|---|---|" + "---|" * len(TRUTHS))
    for sd in SDS:
        for size in SIZES:
            cells = []
            for truth in TRUTHS:
                mean = mean_for(rng, truth, sd)
                token: Counter[str] = Counter()
                robust: Counter[str] = Counter()
                for _ in range(runs // 2):
                    (wl, wu), (rl, ru) = intervals(slice_counts(rng, mean, sd, size))
                    token[zone(wl, wu)] += 1
                    robust[zone(rl, ru)] += 1
                n = runs // 2
                right = true_zone(truth)

                def wrong(tally: Counter[str], right: str = right, n: int = n) -> str:
                    misses = {z: c for z, c in tally.items() if z != right}
                    if not misses:
                        return "0%"
                    worst = max(misses, key=lambda z: misses[z])
                    return f"{sum(misses.values()) / n:.0%} ({worst} {misses[worst] / n:.0%})"

                cells.append(f"{wrong(token)} -> {wrong(robust)}")
            print(f"| {sd:g} | {size} | " + " | ".join(cells) + " |")


def ab_records(seed: int, gain: float) -> list[RequestRecord]:
    """Two hours of A/B traffic, in time order: 4 models, per 5 minutes 100 speculative and
    24 baseline requests; time per output token lognormal (sd 0.3), speculation's faster by
    `gain`; acceptance 0.8 at K = 4."""
    rng = np.random.default_rng(seed)
    records = []
    for m in range(4):
        model = f"m{m}"
        for window in range(24):
            for i in range(124):
                baseline = i >= 100
                ts = 1.8e9 + window * 300 + float(rng.uniform(0, 300))
                tpot = 0.020 * (gain if baseline else 1.0) * float(np.exp(rng.normal(0, 0.3)))
                spec = None
                tokens = int(rng.integers(50, 250))
                if not baseline:
                    steps = int(rng.integers(20, 60))
                    accepted = request_steps(rng, 0.8, steps)
                    spec = SpecDecodeBlock(K, (K,) * steps, tuple(accepted))
                    tokens = 1 + sum(accepted) + steps
                records.append(RequestRecord(
                    ts=ts, request_id=f"{m}-{window}-{i}", model=model, task="chat",
                    outcome=C.Outcome.OBSERVED, prompt_tokens=int(rng.integers(10, 400)),
                    completion_tokens=tokens, spec=spec, latency=Latency(tpot=tpot),
                    variant=C.VARIANT_BASELINE if baseline else C.VARIANT_SPEC,
                ))  # fmt: skip
    records.sort(key=lambda r: r.ts)
    return records


def gain_replay(seed: int, gain: float) -> tuple[dict[str, int], dict[str, str]]:
    """Red turns per model and final zones over two hours of A/B traffic (true gain `gain`)."""
    settings = load_settings()
    records = ab_records(seed, gain)
    analyzer = Analyzer(settings, started=records[0].ts)
    interval = settings.zones.evaluation_interval_seconds
    turns: Counter[str] = Counter()
    evaluate_at = records[0].ts + interval
    with structlog.testing.capture_logs() as logs:
        for record in records:
            while record.ts >= evaluate_at:
                analyzer.evaluate(evaluate_at)
                evaluate_at += interval
            analyzer.ingest(record)
    for event in logs:
        if event["event"] == "zone_changed" and event["ctx_bucket"] == C.ALL:
            turns[event["model"]] += event["zone"] == C.Zone.RED
    final = {view.key.model: view.zone for view in analyzer.snapshot(records[-1].ts).rollups}
    return dict(turns), final


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    configure("info", "console")  # zone changes are counted from captured log events
    rng = np.random.default_rng(args.seed)
    coverage_table(rng, args.runs)
    confusion_table(rng, args.runs)
    print("\nmeasured gain, 2 h of A/B per model (4 models), seeds 1-3:")
    for gain in (1.05, 0.80):
        for seed in (1, 2, 3):
            turns, final = gain_replay(seed, gain)
            print(f"  true gain {gain:.2f}, seed {seed}: red turns per model "
                  f"{[turns.get(m, 0) for m in sorted(final)]}, final zones "
                  f"{[str(final[m]) for m in sorted(final)]}")  # fmt: skip


if __name__ == "__main__":
    main()
