"""[compiled] Two configs' goodput cells brought to the same load (analysis/compare/goodput.py reads
them).

A cell is a slice's load bucket; each side's requests in it have their decode seconds x, decode
tokens y and load b (requests in flight as they started), summed
(analysis/counting/sums.DecodeSums).

- Each side's spread: the squared relative deviation of a request's TPOT from its cell's,
  pooled over the slice's load buckets (a cell of five requests says little of its own
  variance, its slice's cells together do); a cell's log variance is n / (n - 1) x that spread
  x sum y^2 / (sum y)^2, the cluster-robust variance with each request's deviation at its
  slice's mean.
- The load's slope kappa per model and load bucket: the tokens-weighted regression of a
  request's TPOT on its load within each (cell, side), relative to the cell's TPOT, pooled
  over both sides and every slice (ANCOVA's within-group slope: never the difference between
  the sides, which is what is judged), with its sandwich variance.
- A pair: one cell both sides timed, with the after side's mean load less the before side's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from specwatch.analysis.counting.sums import DecodeSums, Sums

# a cell's key: (*the slice's key, model first; the load bucket last)
K = TypeVar("K", bound=tuple[str, ...])


@dataclass(frozen=True, slots=True)
class LoadSlope:
    """Per model and load bucket: kappa, the relative change of TPOT per request in flight
    (pooled within every cell and side), its variance and degrees of freedom."""

    slope: float
    variance: float
    df: float


@dataclass(frozen=True, slots=True)
class Spread:
    """Per slice and side: the squared relative deviation of a request's TPOT from its cell's,
    pooled over the slice's load buckets (weighted by tokens squared), and its degrees of
    freedom (requests less cells)."""

    deviation: float
    df: float


@dataclass(frozen=True, slots=True)
class Pair:
    """One cell both sides timed: its sums, its load bucket's key (model, load), the after
    side's mean load minus the before side's (0 where a side's loads are not known), and each
    side's pooled spread."""

    before: Sums
    after: Sums
    bucket: tuple[str, str]
    shift: float
    spreads: tuple[Spread, Spread]
    weight: float  # the after side's decode tokens in the cell (TPOT's, for its factors too)
    slice: tuple[str, ...] = ()  # the cell's key less its load: where its spread is pooled

    @classmethod
    def alone(
        cls, before: Sums, after: Sums, bucket: tuple[str, str] = ("", ""), shift: float = 0.0
    ) -> Pair:
        """A pair whose sides' spreads are their own cell's (a comparison of one cell)."""
        return cls(before, after, bucket, shift, (own_spread(before), own_spread(after)), after.y)

    def log_variances(self) -> tuple[float, float]:
        """Var(log TPOT) of each side: n / (n - 1) x the pooled deviation x sum y^2 / (sum y)^2
        (the cluster-robust variance with each request's deviation at its slice's mean)."""
        return (
            log_variance(self.before, self.spreads[0]),
            log_variance(self.after, self.spreads[1]),
        )


def log_variance(sums: Sums, spread: Spread) -> float:
    n = sums.requests
    return n / max(1.0, n - 1.0) * spread.deviation * sums.yy / (sums.y * sums.y)


def _deviation(s: Sums) -> float:
    """sum over a cell's requests of (x_i - T y_i)^2 / T^2: y_i^2 (t_i / T - 1)^2."""
    t = s.x / s.y
    return max(0.0, s.xx - 2.0 * t * s.xy + t * t * s.yy) / (t * t)


def own_spread(s: Sums) -> Spread:
    """One cell's spread, from its own requests alone."""
    return Spread(_deviation(s) / s.yy, max(1.0, s.requests - 1.0))


def spreads(side: Mapping[K, Sums]) -> dict[tuple[str, ...], Spread]:
    """Per slice (a cell's key less its load) the side's pooled spread: a cell of five
    requests says little of its own variance, its slice's cells together do."""
    parts: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for cell, s in side.items():
        if timed(s, 2):
            got = parts[cell[:-1]]
            got[0] += _deviation(s)
            got[1] += s.yy
            got[2] += s.requests - 1
    return {
        key: Spread(deviation / yy, max(1.0, df))
        for key, (deviation, yy, df) in parts.items()
        if yy > 0 and math.isfinite(deviation)
    }


def mean_load(sums: Sums) -> float | None:
    """The tokens-weighted mean load of a side's requests; None where it was not recorded."""
    if isinstance(sums, DecodeSums) and sums.yb > 0 and sums.y > 0:
        return sums.yb / sums.y
    return None


def timed(sums: Sums, least: int) -> bool:
    finite = math.isfinite(sums.x + sums.y + sums.xx + sums.xy + sums.yy)
    return sums.requests >= max(2, least) and sums.x > 0 and sums.y > 0 and finite


def load_slopes(sides: Iterable[Mapping[K, Sums]]) -> dict[tuple[str, str], LoadSlope]:
    """kappa per (model, load bucket): the tokens-weighted regression of each request's TPOT
    t_i on its load b_i within each (cell, side) g, relative to g's TPOT T_g and pooled:
    sum_g (sum x b - T_g sum y b) / T_g over sum_g (sum y b^2 - (sum y b)^2 / sum y). Its
    variance: sum_g e_g (sum y^2 (b - B_g)^2) / (the denominator)^2, e_g the y^2-weighted mean
    of a request's squared relative deviation (t_i / T_g - 1)^2 in g."""
    parts: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    for side in sides:
        for cell, s in side.items():
            if not isinstance(s, DecodeSums) or s.yb <= 0 or not timed(s, 2):
                continue
            t, b = s.x / s.y, s.yb / s.y
            e = _deviation(s) / s.yy
            got = parts[cell[0], cell[-1]]
            got[0] += (s.xb - t * s.yb) / t
            got[1] += max(0.0, s.ybb - s.yb * b)
            got[2] += e * max(0.0, s.yybb - 2.0 * b * s.yyb + b * b * s.yy)
            got[3] += s.requests
            got[4] += 1
    out: dict[tuple[str, str], LoadSlope] = {}
    for key, (num, den, var, n, groups) in parts.items():
        if den > 0 and math.isfinite(num + den + var):
            out[key] = LoadSlope(num / den, var / (den * den), max(1.0, n - 2.0 * groups))
    return out
