"""What attainment's interval covers, measured on traffic like a real server's: a request's
chance to miss an objective moves with its minute (load, the mix of prompts), so misses come
in bursts. With the minute as the unit of sampling the 95% interval covers about 95%; with the
request as the unit (a plain Wilson interval) it covers far less. The difference of two A/B
arms that share each minute's shocks is covered at least as often as stated."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from specwatch.analysis.counting.objectives import Minutes
from specwatch.analysis.counting.stats import (
    difference_interval,
    proportion_interval,
    wilson,
)

MISS = 0.02  # the mean share of requests that miss, over all minutes
SHOCK_SHAPE = 0.5  # a minute's miss rate is MISS x Gamma(0.5, 2): mean 1, variance 2
MINUTES = 60
PER_MINUTE = 20.0
RUNS = 400


def minutes(rng: np.random.Generator, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per minute the requests and their shock: Poisson arrivals, a gamma shock of mean 1."""
    shocks = rng.gamma(SHOCK_SHAPE, 1.0 / SHOCK_SHAPE, MINUTES)
    return rng.poisson(PER_MINUTE * scale, MINUTES), shocks


def arm(rng: np.random.Generator, n: np.ndarray, shocks: np.ndarray, miss: float) -> Minutes:
    kept = Minutes()
    bad = rng.binomial(n, np.minimum(1.0, miss * shocks))
    for minute, (events, misses) in enumerate(zip(n.tolist(), bad.tolist(), strict=True)):
        for i in range(events):
            kept.add(minute, i >= misses)
    return kept


def test_the_minute_robust_interval_covers_what_it_states_and_wilson_does_not() -> None:
    rng = np.random.default_rng(20261207)
    robust = plain = 0
    for _ in range(RUNS):
        n, shocks = minutes(rng, 1.0)
        kept = arm(rng, n, shocks, MISS)
        interval = kept.interval(0.95)
        assert interval is not None
        robust += interval.lower <= 1.0 - MISS <= interval.upper
        lower, upper = wilson(kept.sum_good + kept.good, kept.sum_events + kept.events, 0.95)
        plain += lower <= 1.0 - MISS <= upper
    # 400 runs: a coverage's standard error is ~0.011 at 0.95
    assert robust / RUNS >= 0.92, robust / RUNS
    assert plain / RUNS <= 0.90, plain / RUNS


def test_the_difference_of_two_arms_in_the_same_minutes_is_covered() -> None:
    # speculation misses 1.5 times as often as the baseline, in the same minutes' shocks;
    # the baseline gets 30% of the requests (ab.baseline_percent)
    rng = np.random.default_rng(7)
    covered = 0
    truth = (1.0 - 1.5 * MISS) - (1.0 - MISS)
    for _ in range(RUNS):
        total, shocks = minutes(rng, 1.0)
        base = rng.binomial(total, 0.3)
        spec = arm(rng, total - base, shocks, 1.5 * MISS).interval(0.95)
        baseline = arm(rng, base, shocks, MISS).interval(0.95)
        assert spec is not None
        assert baseline is not None
        d = difference_interval(spec, baseline)
        covered += d.lower <= truth <= d.upper
    assert covered / RUNS >= 0.93, covered / RUNS


@given(
    st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=60),
)
def test_the_kept_sums_are_the_sums_per_minute(steps: list[tuple[int, bool]]) -> None:
    kept = Minutes()
    minute = 0
    clusters: list[list[int]] = []
    for advance, good in steps:
        minute += advance
        kept.add(minute, good)
        if not clusters or advance:
            clusters.append([0, 0])
        clusters[-1][0] += good
        clusters[-1][1] += 1
    g = [float(c[0]) for c in clusters]
    n = [float(c[1]) for c in clusters]
    expected = proportion_interval(
        float(len(clusters)),
        sum(g),
        sum(n),
        sum(x * x for x in g),
        sum(x * y for x, y in zip(g, n, strict=True)),
        sum(y * y for y in n),
        0.9,
    )
    assert kept.interval(0.9) == expected
