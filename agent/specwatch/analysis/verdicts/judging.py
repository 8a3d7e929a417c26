"""[compiled] What an evaluation judges a slice on, kept between evaluations: the evidence of the
zone windows and the intervals of the verdict window, each computed again only when what it is read
from changed (most slices of a wide deployment are quiet at most evaluations)."""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import Interval, alpha_interval, rate_interval, tau_interval
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.analysis.verdicts.evidence import Evidence, gathered
from specwatch.analysis.verdicts.evidence_windows import EvidenceWindows
from specwatch.analysis.verdicts.thresholds import Thresholds
from specwatch.core.records import SliceKey
from specwatch.settings import Settings


class Judging:
    """Per slice, its evidence and its verdict window's intervals (the zone's metric, tau)."""

    def __init__(self, settings: Settings, window: SlidingWindow[SliceKey]) -> None:
        self._cfg = settings
        self.thresholds = Thresholds(settings.zones)  # what the zone rules read, as they read it
        self._window = window
        evidence = settings.evidence_windows_seconds
        # the longest window a zone is judged on: past it, a horizon restricts nothing
        self.longest = max((settings.window.length_seconds, *evidence))
        self.windows: EvidenceWindows[SliceKey] = EvidenceWindows(
            evidence, max(settings.window.bucket_seconds, min(evidence, default=0) / 30)
        )
        self._judged: dict[SliceKey, tuple[tuple[int, int, bool], Evidence | None]] = {}
        self._intervals: dict[SliceKey, tuple[int, Interval | None, Interval | None]] = {}

    def evidence(
        self, key: SliceKey, counts: Counts, source: str, now: float, entry: bool
    ) -> Evidence | None:
        """The evidence of the verdict window and the longer ones (analysis/verdicts/evidence.py),
        computed again only when one of them changed, or whether the slice is `entry`ing a
        verdict. vLLM's own counters (a model without per-request data) have the verdict
        window only."""
        proxy = source == C.SliceSource.PROXY
        versions = (
            (self._window.version(key), self.windows.version(key, now), entry) if proxy else None
        )
        cached = self._judged.get(key)
        if versions is not None and cached is not None and cached[0] == versions:
            return cached[1]
        metric = self.metric(counts, source)
        windows = [(self._cfg.window.length_seconds, Sums.of(counts, metric))]
        if proxy:
            windows += self.windows.read(key, now, metric)
        evidence = gathered(windows, self.thresholds, entry)
        self._judged[key] = (versions or (-1, -1, entry), evidence)
        return evidence

    def metric(self, counts: Counts, source: str) -> str:
        """What a slice's zone judges: the configured metric, but the rate where the proxy saw
        drafts without trials (an engine that sends totals only: no step's rejection is known,
        so alpha-hat has no data, and the rate has all of it). vLLM's own counters keep the
        configured metric: their missing trials are a gap in the reference, not its kind."""
        if source == C.SliceSource.PROXY and counts.drafted and not counts.trials:
            return "rate"
        return self._cfg.zones.metric

    def latest(self, key: SliceKey) -> Evidence | None:
        """The evidence the latest evaluation judged `key` on (None: none, or not judged)."""
        judged = self._judged.get(key)
        return None if judged is None else judged[1]

    def intervals(
        self, key: SliceKey, counts: Counts, source: str
    ) -> tuple[Interval | None, Interval | None]:
        """The interval zones judge (alpha or rate) and tau's, for the gain: computed again
        only when the slice's window changed."""
        version = self._window.version(key) if source == C.SliceSource.PROXY else None
        cached = self._intervals.get(key)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1], cached[2]
        confidence = self._cfg.zones.confidence
        judge = alpha_interval if self.metric(counts, source) == "alpha" else rate_interval
        interval, tau = judge(counts, confidence), tau_interval(counts, confidence)
        if version is not None:
            self._intervals[key] = (version, interval, tau)
        return interval, tau
