"""[compiled] Two configs compared on what users feel: the ratio of their decode times per output
token (TPOT, after over before: canary over stable, the config after a change over the one before),
slice by slice, at the same load, with its interval and a verdict guarded across the slices.

TPOT moves with load as much as with the config: a canary that runs at half the stable pods'
requests in flight decodes faster whatever its draft, and one at 30 in flight against stable's
18 decodes slower. So the two sides are compared at the same load, in two steps:

1. Within each load bucket (the requests in flight at the upstream when a request started,
   the buckets `advise` uses): a bucket only one side saw is not compared (no extrapolation
   past the loads both sides cover), and when such buckets hold much of the after side's
   decode tokens a caveat says so; when none is shared the verdict is `insufficient`, with
   the two sides' loads in words.
2. Within a bucket the two sides' loads still differ (18 against 30 are both in 17-32). Each
   cell's log-ratio is moved to the after side's mean load by the load's effect on TPOT,
   learnt from the requests themselves: per model and load bucket the relative slope kappa
   of a request's TPOT on its load, from the variation of load *within* each (cell, side) --
   both sides, every slice, never the difference between the sides, which is what is judged
   (ANCOVA's pooled within-group slope, weighted by decode tokens as TPOT is). The cell's
   log-ratio at the same load is log(T_after / T_before) - kappa (b_after - b_before), b a
   side's tokens-weighted mean load in the cell.

The shape assumed: within one load bucket TPOT is linear in the load, with the same relative
slope for both configs and all slices of a model (load moves the step's time, which both
configs' steps share; benchmarks/goodput_verdicts.py measures a linear, a convex and a kneed
curve; docs/statistics.md says what happens outside it). The load recorded is the requests in
flight as a request started: where the batch it decoded in moved far from that, the slope is
attenuated and part of the load's effect is left in the ratio.

Per cell the log of each side's TPOT has the delta-method variance V / T^2 from the
cluster-robust variance V of the ratio estimator (analysis/counting/stats.py: requests are the
sampling unit); kappa's variance is the sandwich form with each request's squared relative deviation
taken at its (cell, side)'s mean. The combined log-ratio's variance is the weighted sum of
the cells' plus, per load bucket, (sum of weight x load difference)^2 Var(kappa), with
Welch-Satterthwaite's degrees of freedom, and the interval exp(log-ratio +- t sqrt(variance)).
The family-wise guard is analysis/compare/alpha.py's: one Bonferroni family per model over its
slices compared and its rollup. Verdicts:

- `slower` / `faster`: the whole interval of the ratio above / below 1;
- `same`: the whole interval within 1 +- margin;
- `insufficient`: too few requests timed on a side, loads that do not overlap, or an interval
  that can tell neither (`reason` says which).

benchmarks/goodput_verdicts.py measures the coverage and the verdicts' error rates on the
simulator's cost model with overdispersed requests, at equal and unequal loads.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from specwatch.analysis.compare.alpha import family_confidence
from specwatch.analysis.compare.factors import (
    STEP_TIME,
    TOKENS_PER_STEP,
    Factors,
    factor_pairs,
    factor_part,
    factors_of,
)
from specwatch.analysis.compare.same_load import (
    K,
    LoadSlope,
    Pair,
    Spread,
    load_slopes,
    mean_load,
    spreads,
    timed,
)
from specwatch.analysis.counting.stats import Interval, t_quantile
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.speed.goodput import MAX_EXPONENT

FASTER, SLOWER, SAME, INSUFFICIENT = "faster", "slower", "same", "insufficient"
LOAD_MOVED = 0.2  # from this share of the after side's decode tokens at loads only it saw
MIX_MOVED_LOAD = 0.1  # PSI of the load buckets' shares from which the load is said to move
# from this |log| of the load's adjustment the verdict leans on TPOT being straight in load
LEANS_ON_SLOPE = 0.1


@dataclass(frozen=True, slots=True)
class TpotComparison:
    key: tuple[str, ...]  # a slice's key (model first), or (model,) for its rollup
    before: Sums  # over every cell of the slice
    after: Sums
    ratio: Interval | None  # after TPOT / before TPOT at the same load, the after side's mix
    verdict: str
    loads_compared: int
    caveat: str | None
    load_adjustment: float | None = None  # the ratio at the same load over the cells' raw one
    reason: str | None = None  # why `insufficient`
    factors: Factors | None = None  # None where a side's engine steps are not known

    def as_dict(self, names: tuple[str, ...], sides: tuple[str, str]) -> dict[str, Any]:
        """The JSON shape `compare` (sides a, b) and /status.change (before, after) share."""
        r = self.ratio
        return {
            **dict(zip(names, self.key, strict=False)),
            **{
                side: {
                    "requests": sums.requests,
                    "tpot_seconds": sums.x / sums.y if sums.y > 0 else None,
                    "mean_load": mean_load(sums),
                }
                for side, sums in zip(sides, (self.before, self.after), strict=True)
            },
            "ratio": None
            if r is None
            else {"estimate": r.estimate, "lower": r.lower, "upper": r.upper},
            "verdict": self.verdict,
            "reason": self.reason,
            "loads_compared": self.loads_compared,
            "load_adjustment": self.load_adjustment,
            "factors": None if self.factors is None else self.factors.as_dict(),
            "caveat": self.caveat,
        }


def combined_ratio(
    cells: Iterable[Pair], slopes: Mapping[tuple[str, str], LoadSlope], confidence: float
) -> tuple[Interval, float] | None:
    """after / before of TPOT at the same load over the cells given (both sides timed in
    each), each cell's log-ratio weighted by its share of the after side's decode tokens;
    with the factor the load's adjustment moved it by."""
    rows = list(cells)
    total = sum(pair.weight for pair in rows)
    if not rows or total <= 0:
        return None
    estimate = variance = shares = adjustment = 0.0
    moved: dict[tuple[str, str], float] = defaultdict(float)  # sum of w x shift per bucket
    for pair in rows:
        before, after = pair.before, pair.after
        w = pair.weight / total
        v_before, v_after = pair.log_variances()
        df_before, df_after = pair.spreads[0].df, pair.spreads[1].df
        slope = slopes.get(pair.bucket)
        shift = 0.0 if slope is None else slope.slope * pair.shift
        estimate += w * (math.log((after.x / after.y) / (before.x / before.y)) - shift)
        adjustment -= w * shift
        variance += w * w * (v_before + v_after)
        shares += w**4 * (v_before**2 / df_before + v_after**2 / df_after)
        if slope is not None:
            moved[pair.bucket] += w * pair.shift
    for bucket, lever in moved.items():
        part = lever * lever * slopes[bucket].variance
        variance += part
        shares += part * part / slopes[bucket].df
    if not math.isfinite(variance + shares + estimate):
        return None
    df = (
        variance * variance / shares
        if shares > 0
        else float(sum(p.before.requests + p.after.requests - 2 for p in rows))
    )
    half = t_quantile(confidence, max(1.0, df)) * math.sqrt(variance)
    if not abs(estimate) + half < MAX_EXPONENT:  # a ratio no float holds
        return None
    ratio = Interval(math.exp(estimate), math.exp(estimate - half), math.exp(estimate + half))
    return ratio, math.exp(adjustment)


def verdict(ratio: Interval | None, margin: float) -> str:
    if ratio is None:
        return INSUFFICIENT
    if ratio.lower > 1.0:
        return SLOWER
    if ratio.upper < 1.0:
        return FASTER
    if 1.0 - margin <= ratio.lower and ratio.upper <= 1.0 + margin:
        return SAME
    return INSUFFICIENT


@dataclass(slots=True)
class _Group:
    before: Sums
    after: Sums
    paired: list[Pair]  # the cells both sides timed
    unpaired_tokens: float  # the after side's decode tokens in cells only it timed
    loads: tuple[set[str], set[str]]  # the load buckets each side timed


def _pair(
    cell: tuple[str, ...],
    b: Sums,
    a: Sums,
    slopes: Mapping[tuple[str, str], LoadSlope],
    spread: tuple[Spread, Spread],
) -> Pair | None:
    """The cell as a pair, or None where its sides' mean loads differ and no slope was
    learnt in its bucket (every request of a side at one load): not comparable at one load."""
    bucket = (cell[0], cell[-1])
    before, after = mean_load(b), mean_load(a)
    shift = 0.0 if before is None or after is None else after - before
    if shift != 0.0 and bucket not in slopes:
        return None
    return Pair(b, a, bucket, shift, spread, a.y, cell[:-1])


def _groups(
    before: Mapping[K, Sums],
    after: Mapping[K, Sums],
    least_cell: int,
    slopes: Mapping[tuple[str, str], LoadSlope],
) -> dict[tuple[str, ...], _Group]:
    spread = (spreads(before), spreads(after))
    """Per slice and per model (key (model,)), its cells paired by load (and, for a model, by
    ctx bucket and task too)."""
    groups: dict[tuple[str, ...], _Group] = defaultdict(
        lambda: _Group(DecodeSums(), DecodeSums(), [], 0.0, (set(), set()))
    )
    empty = Sums()
    for cell in sorted(set(before) | set(after)):
        b, a = before.get(cell, empty), after.get(cell, empty)
        pair = None
        if timed(b, least_cell) and timed(a, least_cell):
            pair = _pair(cell, b, a, slopes, (spread[0][cell[:-1]], spread[1][cell[:-1]]))
        for key in {cell[:-1], cell[:1]}:  # one, when the slices are the models
            group = groups[key]
            group.before.merge(b)
            group.after.merge(a)
            for side, sums in zip(group.loads, (b, a), strict=True):
                if timed(sums, least_cell):
                    side.add(cell[-1])
            if pair is not None:
                group.paired.append(pair)
            else:
                group.unpaired_tokens += a.y
    return groups


def _reason(group: _Group, least_requests: int, verdict_: str) -> str | None:
    """Why a comparison is `insufficient`, in words."""
    if verdict_ != INSUFFICIENT:
        return None
    before, after = group.loads
    if before and after and not group.paired and not before & after:
        return (
            f"the two sides' loads do not overlap (before at {', '.join(sorted(before))} in "
            f"flight, after at {', '.join(sorted(after))}): no comparison at the same load, "
            "and none extrapolated"
        )
    counts = [sum(pair.before.requests for pair in group.paired)]
    counts.append(sum(pair.after.requests for pair in group.paired))
    if min(counts) < least_requests:
        return (
            f"too few requests timed at loads both sides saw: {counts[0]} before, "
            f"{counts[1]} after (at least {least_requests} a side)"
        )
    return "the interval is too wide to tell slower, faster or the same"


def compare_tpot(
    before: Mapping[K, Sums],
    after: Mapping[K, Sums],
    confidence: float,
    margin: float,
    least_cell: int,
    least_requests: int,
) -> tuple[list[TpotComparison], list[TpotComparison]]:
    """The slices' and the models' TPOT ratios (after over before, at the same load) with
    their verdicts. A slice (or model) is compared when its paired cells hold at least
    `least_requests` timed requests on each side; a cell is paired when each side timed
    `least_cell` requests in it (and its loads can be brought together). One Bonferroni
    family per model over its slices compared and its rollup."""
    slopes = load_slopes((before, after))
    groups = _groups(before, after, least_cell, slopes)
    spread = tuple(
        spreads({cell: factor_part(sums, part) for cell, sums in side.items()})
        for part in (STEP_TIME, TOKENS_PER_STEP)
        for side in (before, after)
    )

    def compared(group: _Group) -> bool:
        return bool(group.paired) and all(
            sum(pair.after.requests if i else pair.before.requests for pair in group.paired)
            >= least_requests
            for i in (0, 1)
        )

    chosen = {key for key, group in groups.items() if compared(group)}
    families = Counter(key[0] for key in chosen)
    slices: list[TpotComparison] = []
    models: list[TpotComparison] = []
    for key, group in sorted(groups.items()):
        each = family_confidence(confidence, families[key[0]])
        got = combined_ratio(group.paired, slopes, each) if key in chosen else None
        ratio, adjustment = (None, None) if got is None else got
        share = group.unpaired_tokens / group.after.y if group.after.y > 0 else 0.0
        caveats = []
        if share >= LOAD_MOVED:
            caveats.append(
                f"{share:.0%} of the after side's decode tokens ran at loads the before side "
                "did not see: judged on the loads both saw"
            )
        if adjustment is not None and abs(math.log(adjustment)) >= LEANS_ON_SLOPE:
            caveats.append(
                f"the two sides' loads differ within a load bucket: {1 / adjustment - 1:+.0%} "
                "of the raw ratio came from them and was taken out along a straight line of "
                "TPOT against load; where TPOT bends there (a KV-cache knee), put a "
                "load.batch_edges edge at the bend"
            )
        caveat = "; ".join(caveats) or None
        said = verdict(ratio, margin)
        factors = None
        parts = factor_pairs(group.paired, spread) if ratio is not None else None
        if parts is not None:
            step = combined_ratio(parts[0], slopes, each)
            yields = combined_ratio(parts[1], slopes, each)  # their shift is 0: not moved
            if step is not None and yields is not None:
                factors = factors_of(step[0], yields[0], said, margin)
        row = TpotComparison(
            key,
            group.before,
            group.after,
            ratio,
            said,
            len(group.paired),
            caveat,
            adjustment,
            _reason(group, least_requests, said),
            factors,
        )
        (models if len(key) == 1 else slices).append(row)
    return slices, models
