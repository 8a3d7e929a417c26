"""[compiled] What snapshots read of a proxy slice, kept while it does not change.

A scrape snapshots every slice (880 at the default limits); most did not change since the
last one. A slice's window and since-start counts, their statistics and the advice are kept
while the slice's window version (it moves with every request added and every bucket that
leaves) and the cost are the same; a finer slice's whole view while its zone and its drift
verdict are the same too. Its gain is modelled from tau, K and the cost (a finer slice is
never measured against a baseline), so the mark covers it; a rollup's gain may be measured
from A/B traffic of the whole model, so a rollup's view is made at every snapshot (one per
model). Snapshots share what is kept: readers never change it.
"""

from __future__ import annotations

from typing import NamedTuple

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.analysis.drift.detector import DriftView
from specwatch.analysis.speed.advisor import Advice, advice_for
from specwatch.analysis.speed.speedup import Cost
from specwatch.analysis.verdicts.evidence import Evidence
from specwatch.analysis.views import SliceView
from specwatch.core.records import SliceKey

# a finer slice's view is kept while these are equal: window version, cost, zone, zone since,
# drift verdict, zone evidence
ViewMark = tuple[int, Cost, str, float | None, DriftView | None, Evidence | None]


class _KeptCounts(NamedTuple):
    version: int
    window: Counts
    since_start: Counts
    stats: SliceStats
    cost: Cost
    advice: Advice | None


class ViewCache:
    def __init__(self, window: SlidingWindow[SliceKey], confidence: float) -> None:
        self._window = window
        self._confidence = confidence
        self._counts: dict[SliceKey, _KeptCounts] = {}
        self._views: dict[SliceKey, tuple[ViewMark, SliceView]] = {}

    def counts(
        self, key: SliceKey, live: Counts, cost: Cost
    ) -> tuple[Counts, Counts, SliceStats, Advice | None]:
        """A proxy slice's window and since-start counts (copies), their statistics and the
        advice at `cost`: computed again only when the slice's counts (or the cost) changed."""
        version = self._window.version(key)
        kept = self._counts.get(key)
        if kept is None or kept.version != version:
            counts = live.copy()
            stats = SliceStats.of(counts, self._confidence)
            advice = advice_for(counts, stats, cost.ratio)
            kept = _KeptCounts(version, counts, self._window.since_start(key), stats, cost, advice)
            self._counts[key] = kept
        elif kept.cost != cost:
            advice = advice_for(kept.window, kept.stats, cost.ratio)
            kept = kept._replace(cost=cost, advice=advice)
            self._counts[key] = kept
        return kept.window, kept.since_start, kept.stats, kept.advice

    def mark(
        self,
        key: SliceKey,
        cost: Cost,
        zone: str,
        since: float | None,
        drift: DriftView | None,
        evidence: Evidence | None,
    ) -> ViewMark:
        return (self._window.version(key), cost, zone, since, drift, evidence)

    def view(self, key: SliceKey, mark: ViewMark) -> SliceView | None:
        """The view kept for `key` under an equal mark, if any."""
        kept = self._views.get(key)
        return kept[1] if kept is not None and kept[0] == mark else None

    def keep(self, key: SliceKey, mark: ViewMark, view: SliceView) -> None:
        self._views[key] = (mark, view)
