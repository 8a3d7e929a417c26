"""[compiled] Two configs, or two periods, compared slice by slice: the difference of alpha-hat with
its request-level interval, and a verdict guarded across the slices compared.

The two sides are independent samples of requests (a canary's pods and the stable ones at the
same time; the requests before a config change and after it), so the variance of the
difference is the sum of each side's cluster-robust variance of its ratio estimator
(analysis/counting/stats.py: requests are the sampling unit, the binomial variance the floor), and
Student's t takes Welch-Satterthwaite's degrees of freedom. Comparing many slices at once, the
interval of each is at the Bonferroni confidence 1 - (1 - confidence) / m for m comparisons of
its model (its slices with both sides past the sample gates, and its rollup): the chance that
any of a model's verdicts calls equal configs different stays below 1 - confidence, whatever
other models are compared beside it. The verdicts:

- `worse` / `better`: the whole interval below / above 0;
- `same`: the whole interval within +-margin (equivalence, as two one-sided tests);
- `insufficient`: a side below the sample gates, or an interval that can tell neither.

benchmarks/compare_verdicts.py measures what the interval covers and how often each verdict is
wrong on overdispersed requests like real traffic. gen/rules.py computes the same difference in
PromQL for canary against stable (SpecDecodeCanaryWorse).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from specwatch.analysis.counting.stats import Interval, robust_variance, t_quantile
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.drift.mix import psi, shares

WORSE, BETTER, SAME, INSUFFICIENT = "worse", "better", "same", "insufficient"


def variance(sums: Sums) -> float:
    """The cluster-robust variance of x / y, never below the binomial one (the floor: tokens of
    one request are Bernoulli trials)."""
    p = sums.x / sums.y
    binomial = p * (1.0 - p) / sums.y
    if sums.yy <= 0:  # no per-request data: token level only
        return binomial
    return max(binomial, robust_variance(*sums))


def difference(before: Sums, after: Sums, confidence: float) -> Interval | None:
    """after - before of x / y, with its interval; None when a side has no trials."""
    if before.y <= 0 or after.y <= 0:
        return None
    v_before, v_after = variance(before), variance(after)
    total = v_before + v_after
    shares = v_before**2 / max(1, before.requests - 1) + v_after**2 / max(1, after.requests - 1)
    df = total * total / shares if shares > 0 else float(before.requests + after.requests - 2)
    estimate = after.x / after.y - before.x / before.y
    half = t_quantile(confidence, max(1.0, df)) * math.sqrt(total)
    return Interval(estimate, estimate - half, estimate + half)


def verdict(interval: Interval | None, margin: float) -> str:
    if interval is None:
        return INSUFFICIENT
    if interval.upper < 0.0:
        return WORSE
    if interval.lower > 0.0:
        return BETTER
    if -margin <= interval.lower and interval.upper <= margin:
        return SAME
    return INSUFFICIENT


def family_confidence(confidence: float, compared: int) -> float:
    """Bonferroni: each of `compared` intervals at this confidence keeps the family's."""
    return 1.0 - (1.0 - confidence) / max(1, compared)


def passes(sums: Sums, min_trials: int, min_requests: int) -> bool:
    return sums.y >= min_trials and sums.requests >= min_requests


@dataclass(frozen=True, slots=True)
class SliceComparison:
    key: tuple[str, ...]  # model first: (model, ctx_bucket, task) live; --by's offline
    before: Sums
    after: Sums
    difference: Interval | None
    verdict: str


def _compared(
    rows: list[tuple[tuple[str, ...], Sums, Sums]], min_trials: int, min_requests: int
) -> set[tuple[str, ...]]:
    return {
        key
        for key, before, after in rows
        if passes(before, min_trials, min_requests) and passes(after, min_trials, min_requests)
    }


def _judged(
    rows: list[tuple[tuple[str, ...], Sums, Sums]],
    chosen: set[tuple[str, ...]],
    families: Counter[str],
    confidence: float,
    margin: float,
) -> list[SliceComparison]:
    out = []
    for key, before, after in rows:
        each = family_confidence(confidence, families[key[0]])
        interval = difference(before, after, each) if key in chosen else None
        out.append(SliceComparison(key, before, after, interval, verdict(interval, margin)))
    return out


def compare_slices(
    pairs: Iterable[tuple[tuple[str, ...], Sums, Sums]],
    confidence: float,
    margin: float,
    min_trials: int,
    min_requests: int,
) -> list[SliceComparison]:
    """Every slice's difference and verdict, the intervals at the family-wise confidence over
    the slices of its model where both sides pass the gates (the others are `insufficient`):
    a model's verdicts keep the guard however many other models are compared beside it."""
    rows = list(pairs)
    chosen = _compared(rows, min_trials, min_requests)
    return _judged(rows, chosen, Counter(key[0] for key in chosen), confidence, margin)


@dataclass(frozen=True, slots=True)
class OverallChange:
    """The change of a model's overall alpha-hat between two periods, at the after period's
    traffic mix: sum over slices of w_after (a_after - a_before), where the rate part is what
    a config change did; the mix part sum (w_after - w_before) a_before is what the traffic did
    (analysis/drift/mix.py splits the same way)."""

    rate: float
    mix: float
    total: float


def overall_change(rows: Iterable[SliceComparison]) -> OverallChange | None:
    """From the slices with trials on both sides; None when there are none."""
    both = [r for r in rows if r.before.y > 0 and r.after.y > 0]
    if not both:
        return None
    before_total = sum(r.before.y for r in both)
    after_total = sum(r.after.y for r in both)
    rate = mix = 0.0
    for r in both:
        w0, w1 = r.before.y / before_total, r.after.y / after_total
        a0, a1 = r.before.x / r.before.y, r.after.x / r.after.y
        rate += w1 * (a1 - a0)
        mix += (w1 - w0) * a0
    return OverallChange(rate=rate, mix=mix, total=rate + mix)


MIX_MOVED = 0.1  # PSI from which the traffic mix is said to have moved (0.25: a major shift)


@dataclass(frozen=True, slots=True)
class ModelComparison:
    """One model's rollup compared, its overall change at the after side's mix, and how far
    the mix of its finer slices (their shares of trials) moved: PSI, and a caveat from
    MIX_MOVED on, when the overall change mixes the config's part with the traffic's."""

    rollup: SliceComparison
    overall: OverallChange | None
    mix_psi: float | None
    caveat: str | None


Pairs = list[tuple[tuple[str, ...], Sums, Sums]]


def compare_models(
    rollups: Pairs,
    finer: Pairs,
    confidence: float,
    margin: float,
    min_trials: int,
    min_requests: int,
) -> tuple[list[SliceComparison], list[ModelComparison]]:
    """The finer slices compared, and per model its rollup with the overall change and the mix
    shift of its finer slices. One family per model: its finer slices compared and its rollup
    (when compared) share the Bonferroni guard, so equal configs are called different by any
    of the model's verdicts in at most 1 - confidence of comparisons, and models compared in
    one invocation do not weaken each other. Keys start with the model. The live config change
    (analysis/compare/changes.py) and `specwatch compare` both read their comparison here."""
    finer_rows, rollup_rows = list(finer), list(rollups)
    chosen = _compared(finer_rows, min_trials, min_requests)
    chosen |= _compared(rollup_rows, min_trials, min_requests)
    families = Counter(key[0] for key in chosen)
    slices = _judged(finer_rows, chosen, families, confidence, margin)
    models = []
    for row in _judged(rollup_rows, chosen, families, confidence, margin):
        model = row.key[0]
        mine = [r for r in slices if r.key[0] == model]
        overall = overall_change(mine)
        before = shares({r.key: float(r.before.y) for r in mine})
        after = shares({r.key: float(r.after.y) for r in mine})
        shift = psi(before, after) if before and after else None
        caveat = (
            f"the traffic mix moved (PSI {shift:.2f}): the overall change mixes the "
            "config's part with the traffic's; judge by slice"
            if shift is not None and shift >= MIX_MOVED
            else None
        )
        models.append(ModelComparison(row, overall, shift, caveat))
    return slices, models
