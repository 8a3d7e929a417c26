"""Two configs compared on what users feel: the ratio of their decode times per output token
(TPOT, after over before: canary over stable, the config after a change over the one before),
slice by slice, within load buckets, with its interval and a verdict guarded across the slices.

TPOT moves with load as much as with the config: a canary that runs at half the stable pods'
requests in flight decodes faster whatever its draft. So the two sides are compared within
each load bucket (the requests in flight at the upstream when a request started, the buckets
`advise` uses) and the buckets' log-ratios are combined at the after side's mix: the weight of
a bucket is its share of the after side's decode tokens among the buckets both sides saw. A
model's verdict combines every (ctx bucket, task, load) cell of it the same way, at the after
side's mix of all three. Load buckets only one side saw are not compared, and when they hold
much of the after side's decode tokens a caveat says so.

Per cell the log of each side's TPOT has the delta-method variance V / T^2 from the
cluster-robust variance V of the ratio estimator (analysis/stats.py: requests are the sampling
unit); the combined log-ratio's variance is the weighted sum, with Welch-Satterthwaite's
degrees of freedom, and the interval exp(log-ratio +- t sqrt(variance)). The family-wise guard
is analysis/compare.py's: one Bonferroni family per model over its slices compared and its
rollup. Verdicts:

- `slower` / `faster`: the whole interval of the ratio above / below 1;
- `same`: the whole interval within 1 +- margin;
- `insufficient`: too few requests timed on a side, or an interval that can tell neither.

benchmarks/goodput_verdicts.py measures the coverage and the verdicts' error rates on the
simulator's cost model with overdispersed requests.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from specwatch.analysis.compare import family_confidence
from specwatch.analysis.goodput import MAX_EXPONENT
from specwatch.analysis.speedup import log_variance
from specwatch.analysis.stats import Interval, t_quantile
from specwatch.analysis.sums import Sums

FASTER, SLOWER, SAME, INSUFFICIENT = "faster", "slower", "same", "insufficient"
LOAD_MOVED = 0.2  # from this share of the after side's decode tokens at loads only it saw
MIX_MOVED_LOAD = 0.1  # PSI of the load buckets' shares from which the load is said to move

# a cell's key: (*the slice's key, model first; the load bucket last)
K = TypeVar("K", bound=tuple[str, ...])


@dataclass(frozen=True, slots=True)
class TpotComparison:
    key: tuple[str, ...]  # a slice's key (model first), or (model,) for its rollup
    before: Sums  # over every cell of the slice
    after: Sums
    ratio: Interval | None  # after TPOT / before TPOT at the after side's mix of loads
    verdict: str
    loads_compared: int
    caveat: str | None

    def as_dict(self, names: tuple[str, ...], sides: tuple[str, str]) -> dict[str, Any]:
        """The JSON shape `compare` (sides a, b) and /status.change (before, after) share."""
        r = self.ratio
        return {
            **dict(zip(names, self.key, strict=False)),
            **{
                side: {
                    "requests": sums.requests,
                    "tpot_seconds": sums.x / sums.y if sums.y > 0 else None,
                }
                for side, sums in zip(sides, (self.before, self.after), strict=True)
            },
            "ratio": None
            if r is None
            else {"estimate": r.estimate, "lower": r.lower, "upper": r.upper},
            "verdict": self.verdict,
            "loads_compared": self.loads_compared,
            "caveat": self.caveat,
        }


def _timed(sums: Sums, least: int) -> bool:
    finite = math.isfinite(sums.x + sums.y + sums.xx + sums.xy + sums.yy)
    return sums.requests >= max(2, least) and sums.x > 0 and sums.y > 0 and finite


def combined_ratio(cells: Iterable[tuple[Sums, Sums]], confidence: float) -> Interval | None:
    """after / before of TPOT over the cells given (both sides timed in each), each cell's
    log-ratio weighted by its share of the after side's decode tokens."""
    rows = list(cells)
    total = sum(after.y for _, after in rows)
    if not rows or total <= 0:
        return None
    estimate = variance = shares = 0.0
    for before, after in rows:
        w = after.y / total
        v_before, v_after = log_variance(before), log_variance(after)
        estimate += w * math.log((after.x / after.y) / (before.x / before.y))
        variance += w * w * (v_before + v_after)
        shares += w**4 * (v_before**2 / (before.requests - 1) + v_after**2 / (after.requests - 1))
    if not math.isfinite(variance + shares + estimate):
        return None
    df = (
        variance * variance / shares
        if shares > 0
        else float(sum(b.requests + a.requests - 2 for b, a in rows))
    )
    half = t_quantile(confidence, max(1.0, df)) * math.sqrt(variance)
    if not abs(estimate) + half < MAX_EXPONENT:  # a ratio no float holds
        return None
    return Interval(math.exp(estimate), math.exp(estimate - half), math.exp(estimate + half))


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
    paired: list[tuple[Sums, Sums]]  # the cells both sides timed
    unpaired_tokens: float  # the after side's decode tokens in cells only it timed


def _groups(
    before: Mapping[K, Sums], after: Mapping[K, Sums], least_cell: int
) -> dict[tuple[str, ...], _Group]:
    """Per slice and per model (key (model,)), its cells paired by load (and, for a model, by
    ctx bucket and task too)."""
    groups: dict[tuple[str, ...], _Group] = defaultdict(lambda: _Group(Sums(), Sums(), [], 0.0))
    empty = Sums()
    for cell in sorted(set(before) | set(after)):
        b, a = before.get(cell, empty), after.get(cell, empty)
        for key in {cell[:-1], cell[:1]}:  # one, when the slices are the models
            group = groups[key]
            group.before.merge(b)
            group.after.merge(a)
            if _timed(b, least_cell) and _timed(a, least_cell):
                group.paired.append((b, a))
            else:
                group.unpaired_tokens += a.y
    return groups


def compare_tpot(
    before: Mapping[K, Sums],
    after: Mapping[K, Sums],
    confidence: float,
    margin: float,
    least_cell: int,
    least_requests: int,
) -> tuple[list[TpotComparison], list[TpotComparison]]:
    """The slices' and the models' TPOT ratios (after over before) with their verdicts. A
    slice (or model) is compared when its paired cells hold at least `least_requests` timed
    requests on each side; a cell is paired when each side timed `least_cell` requests in it.
    One Bonferroni family per model over its slices compared and its rollup."""
    groups = _groups(before, after, least_cell)

    def compared(group: _Group) -> bool:
        return bool(group.paired) and all(
            sum(pair[i].requests for pair in group.paired) >= least_requests for i in (0, 1)
        )

    chosen = {key for key, group in groups.items() if compared(group)}
    families = Counter(key[0] for key in chosen)
    slices: list[TpotComparison] = []
    models: list[TpotComparison] = []
    for key, group in sorted(groups.items()):
        each = family_confidence(confidence, families[key[0]])
        ratio = combined_ratio(group.paired, each) if key in chosen else None
        share = group.unpaired_tokens / group.after.y if group.after.y > 0 else 0.0
        caveat = (
            f"{share:.0%} of the after side's decode tokens ran at loads the before side did "
            "not see: judged on the loads both saw"
            if share >= LOAD_MOVED
            else None
        )
        row = TpotComparison(
            key, group.before, group.after, ratio, verdict(ratio, margin), len(group.paired), caveat
        )
        (models if len(key) == 1 else slices).append(row)
    return slices, models
