"""[compiled] The statistics' definitions, written once, and their intervals.

For a step with d drafted and a accepted tokens (0 <= a <= d):
- vLLM's rate r = sum a / sum d (falls with K even for an equally good draft);
- alpha-hat = sum a / sum trials, trials = a + (1 if a < d else 0): per-token acceptance
  probability, comparable across K;
- tau = 1 + sum a / steps (mean tokens per step, bonus token included);
- p_i = steps with a >= i / steps.

Intervals treat the request as the unit of sampling. Requests differ from each other far more
than a token-level (binomial) model assumes: in real vLLM captures the per-request dispersion
of accepted / trials is 5 to 9, and a Wilson interval on (accepted, trials) then covers the
truth only 65-70% of the time. Every ratio here is a ratio estimator sum(x_i) / sum(y_i) over
the requests i of the slice, with the cluster-robust (sandwich) variance

    Var(x/y) = n / (n - 1) * sum (x_i - (x/y) y_i)^2 / (sum y_i)^2,

which expands into sums of x_i^2, x_i y_i and y_i^2: counters, so Prometheus computes the
same figure fleet-wide (gen/rules.py). For the proportions alpha-hat and rate the interval is
Wilson's score interval on an effective sample size, trials / design effect, where the design
effect is the robust variance over the binomial one, never below 1 (the binomial variance is
the floor: tokens of one request are Bernoulli trials), and with Student's t on n - 1 degrees
of freedom in place of z (few requests make the variance itself uncertain). Wilson's form
keeps the bounds inside [0, 1] and behaves at acceptance near 1 (ngram). Homogeneous traffic
pays at most the t factor (n = 30: 2.05 against 1.96). tau gets a t interval on the ratio.
benchmarks/uncertainty.py measures what these intervals cover on overdispersed traffic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import msgspec

from specwatch.analysis.counting.counts import Counts


@lru_cache(maxsize=16)
def z_for(confidence: float) -> float:
    """Two-sided normal quantile: 0.95 -> 1.96."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


@lru_cache(maxsize=16)
def t_coefficients(confidence: float) -> tuple[float, ...]:
    """(c0, .., c4) with Student's t quantile ~ c0 + c1/df + c2/df^2 + c3/df^3 + c4/df^4.

    The Cornish-Fisher expansion of t around the normal quantile z (Abramowitz & Stegun
    26.7.5), an asymptotic series: at 95% within 1e-7 from 21 degrees of freedom on, but 11%
    short at 1 (24% with the four terms the rules had); far in the tail (the zones' evidence
    bar, z ~ 5.7) within 4e-6 only from 61 on. The recording rules use it past the exact
    table they carry for fewer degrees of freedom (gen/rules.py: `t_table_df`); the sidecar
    uses `t_quantile`.
    """
    z = z_for(confidence)
    return (
        z,
        (z**3 + z) / 4.0,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96.0,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0,
    )


def t_table_df(confidence: float) -> int:
    """Degrees of freedom up to which the recording rules carry exact quantiles: past it the
    Cornish-Fisher polynomial is within 4e-6 of them (tests/unit/analysis/test_stats.py)."""
    return 20 if confidence <= 0.999 else 60


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the regularized incomplete beta (Lentz's method)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(x, a, b) / a
    return 1.0 - front * _beta_fraction(1.0 - x, b, a) / b


# (confidence, df) -> `t_quantile`, emptied when full (as evidence._WIDENINGS, and why a dict)
_T_QUANTILES: dict[tuple[float, float], float] = {}
_T_QUANTILES_KEPT = 4096


def t_quantile(confidence: float, df: float) -> float:
    """Student's t two-sided quantile on `df` degrees of freedom (at least 1): `_t_quantile`,
    kept per (confidence, df) (every interval of every slice asks it at each evaluation)."""
    key = (confidence, df)
    value = _T_QUANTILES.get(key)
    if value is None:
        if len(_T_QUANTILES) >= _T_QUANTILES_KEPT:
            _T_QUANTILES.clear()
        value = _T_QUANTILES[key] = _t_quantile(confidence, df)
    return value


def _t_quantile(confidence: float, df: float) -> float:
    """Student's t two-sided quantile on `df` degrees of freedom (at least 1), to about 1e-12:
    the t > 0 whose two tails hold 1 - confidence, I_x(df/2, 1/2) = 1 - confidence at
    x = df / (df + t^2). Newton's method on the tails from the Cornish-Fisher value, which lies
    below the root: the tails are convex in t there, so every step stays below and converges.

    Written here because no runtime dependency has it (scipy would be one for this
    function); tests/unit/analysis/test_stats.py checks it against scipy.stats.t.ppf. Few
    requests are where a bound is most over-confident with an approximation: 11% short at 1
    degree of freedom with Cornish-Fisher's five terms.
    """
    df = max(1.0, df)
    tails, a = 1.0 - confidence, df / 2.0
    # the density of |T| at t is 2 * this * (1 + t^2/df)^(-(df+1)/2)
    log_scale = math.lgamma((df + 1.0) / 2.0) - math.lgamma(a) - 0.5 * math.log(df * math.pi)
    t = min(cornish_fisher_t(confidence, df), 1e6)
    for _ in range(100):
        excess = _incomplete_beta(df / (df + t * t), a, 0.5) - tails
        density = 2.0 * math.exp(log_scale - (df + 1.0) / 2.0 * math.log1p(t * t / df))
        step = excess / density
        t += step
        if abs(step) <= 1e-13 * t:
            break
    return t


def cornish_fisher_t(confidence: float, df: float) -> float:
    """The polynomial approximation of `t_quantile` the recording rules use past the table."""
    df = max(1.0, df)
    return sum(c / df**i for i, c in enumerate(t_coefficients(confidence)))


@lru_cache(maxsize=16)
def tail_confidence(bar: float) -> float:
    """The two-sided confidence whose quantile is z = sqrt(2 bar): where a log-likelihood
    ratio of `bar` puts the estimate, in standard errors from the nearer hypothesis."""
    return 2.0 * NormalDist().cdf(math.sqrt(2.0 * bar)) - 1.0


def wilson(successes: float, trials: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when there are no trials."""
    if trials <= 0:
        return 0.0, 1.0
    return wilson_bounds(successes / trials, trials, z_for(confidence))


def wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score bounds of proportion p on n (possibly effective) trials, quantile z."""
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z * math.sqrt(max(0.0, p * (1.0 - p) / n + z2 / (4.0 * n * n))) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def robust_variance(n: float, x: float, y: float, xx: float, xy: float, yy: float) -> float:
    """Cluster-robust variance of the ratio x / y from n clusters' sums (n/(n-1) correction).

    Floats, not only counts: Prometheus' increases of the same counters are extrapolated."""
    r = x / y
    residual = max(0.0, xx - 2.0 * r * xy + r * r * yy)
    return n / max(1.0, n - 1.0) * residual / (y * y)


class Interval(msgspec.Struct, frozen=True):
    """An estimate and its bounds. `design_effect`: the request-robust variance over the
    binomial one (>= 1) for a proportion, None where there was no per-request data (vLLM's
    own counters: then the bounds are token-level and too narrow on real traffic).

    A frozen msgspec Struct, made in C: an evaluation makes two or three per slice it judges
    again, and a frozen dataclass sets each field through object.__setattr__."""

    estimate: float
    lower: float
    upper: float
    design_effect: float | None = None


def proportion_interval(
    n: float, x: float, y: float, xx: float, xy: float, yy: float, confidence: float
) -> Interval | None:
    """x / y (x <= y) over n requests, with Wilson's bounds on trials / design effect."""
    if y <= 0:
        return None
    p = x / y
    binomial = p * (1.0 - p) / y
    known = yy > 0  # per-request sums exist (vLLM's engine counters have none)
    deff = 1.0
    if known and binomial > 0.0:
        deff = max(1.0, robust_variance(n, x, y, xx, xy, yy) / binomial)
    lower, upper = wilson_bounds(p, y / deff, t_quantile(confidence, n - 1))
    return Interval(p, lower, upper, deff if known else None)


def difference_interval(a: Interval, b: Interval) -> Interval:
    """a - b for two proportions from independent samples, Newcombe's square-and-add of their
    own intervals (his method 10 where those are Wilson's): the bounds inherit each side's
    behaviour near 0 and 1, where a Wald interval on the difference is too narrow. Samples that
    share shocks (two arms in the same minutes) are positively correlated, which only makes
    this wider than it need be."""
    d = a.estimate - b.estimate
    below = math.sqrt((a.estimate - a.lower) ** 2 + (b.upper - b.estimate) ** 2)
    above = math.sqrt((a.upper - a.estimate) ** 2 + (b.estimate - b.lower) ** 2)
    return Interval(d, d - below, d + above)


def ratio_interval(
    n: float,
    x: float,
    y: float,
    xx: float,
    xy: float,
    yy: float,
    confidence: float,
    shift: float = 0.0,
) -> Interval | None:
    """x / y over n requests with a t interval on the robust variance (bounds kept >= 0),
    `shift` added to all three."""
    if y <= 0:
        return None
    r = x / y
    if yy <= 0:  # no per-request data: no honest interval
        return Interval(r + shift, r + shift, r + shift)
    half = t_quantile(confidence, n - 1) * math.sqrt(robust_variance(n, x, y, xx, xy, yy))
    return Interval(r + shift, max(0.0, r - half) + shift, r + half + shift)


@dataclass(frozen=True, slots=True)
class SliceStats:
    """Statistics of one slice's counts; None where the counts give no evidence."""

    alpha: Interval | None
    rate: Interval | None
    tau: Interval | None
    per_position: tuple[float, ...]

    @classmethod
    def of(cls, c: Counts, confidence: float) -> SliceStats:
        per_position: tuple[float, ...] = ()
        if c.steps:  # per position: of the steps that drafted that far
            reached = c.by_position[: c.max_drafted]
            tested = c.drafted_by_position
            per_position = tuple(k / n if n else 0.0 for k, n in zip(reached, tested, strict=False))
        return cls(
            alpha=alpha_interval(c, confidence),
            rate=rate_interval(c, confidence),
            tau=tau_interval(c, confidence),
            per_position=per_position,
        )


def alpha_interval(c: Counts, confidence: float) -> Interval | None:
    """accepted / trials, over the slice's requests."""
    return proportion_interval(c.requests, c.accepted, c.trials, c.aa, c.at, c.tt, confidence)


def rate_interval(c: Counts, confidence: float) -> Interval | None:
    """accepted / drafted, over the slice's requests."""
    return proportion_interval(c.requests, c.accepted, c.drafted, c.aa, c.ad, c.dd, confidence)


def tau_interval(c: Counts, confidence: float) -> Interval | None:
    """Tokens per step, 1 + accepted / steps, over the slice's requests."""
    return ratio_interval(c.requests, c.accepted, c.steps, c.aa, c.as_, c.ss, confidence, 1.0)


@dataclass(frozen=True, slots=True)
class Dispersion:
    """How much requests differ in acceptance, from their (accepted, trials) pairs.

    `pearson`: Pearson's chi-square per degree of freedom of accepted against trials x alpha
    (1 when requests differ no more than binomial draws; real vLLM traffic: 5 to 9).
    `between_sd`: the standard deviation of the requests' own acceptance around alpha, by the
    method of moments: sum (a_i - alpha t_i)^2 = sd^2 sum t_i^2 + alpha (1 - alpha) sum t_i.
    """

    requests: int
    alpha: float
    pearson: float
    between_sd: float


def dispersion(pairs: list[tuple[int, int]]) -> Dispersion | None:
    usable = [(a, t) for a, t in pairs if t > 0]
    n = len(usable)
    total_a = sum(a for a, _ in usable)
    total_t = sum(t for _, t in usable)
    if n < 2 or not 0 < total_a < total_t:
        return None
    p = total_a / total_t
    binomial = p * (1.0 - p)
    residuals = [(a - p * t) ** 2 for a, t in usable]
    pearson = sum(r / (t * binomial) for r, (_, t) in zip(residuals, usable, strict=True)) / (n - 1)
    excess = sum(residuals) - binomial * total_t
    between = math.sqrt(max(0.0, excess / sum(t * t for _, t in usable)))
    return Dispersion(requests=n, alpha=p, pearson=pearson, between_sd=between)
