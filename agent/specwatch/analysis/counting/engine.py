"""[compiled] vLLM's own engine-wide counters (from /metrics) and stats lines (from its log),
windowed.

They are the cross-check of what the proxy saw (coverage), the reference for each model's `all`
slice, and its only source when vLLM sends no per-request data.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.core.records import EngineLogRecord, EngineSample, SpecLogRecord


def _delta_counts(
    current: EngineSample, previous: EngineSample | None, max_position: int
) -> tuple[Counts, bool]:
    """Counts between two samples, and whether the counters were reset (vLLM restarted):
    then the counts are those since the reset."""

    def values(sample: EngineSample) -> tuple[float, ...]:
        return (
            sample.drafts,
            sample.draft_tokens,
            sample.accepted_tokens,
            sample.requests,
            *sample.accepted_per_position,
        )

    now = values(current)
    before = values(previous) if previous is not None else (0.0,) * len(now)
    reset = len(before) != len(now) or any(b > n for b, n in zip(before, now, strict=True))
    if reset:
        before = (0.0,) * len(now)  # everything counted since the reset is new
    delta = [round(n - b) for n, b in zip(now, before, strict=True)]
    counts = Counts(max_position)
    counts.steps, counts.drafted, counts.accepted, counts.requests = delta[:4]
    per_position = delta[4:]
    for i, n in enumerate(per_position[:max_position]):
        counts.by_position[i] = n
    k = len(per_position)
    counts.max_drafted = k
    # vLLM 0.32 exports no per-position draft counter: every step is taken to draft K (below)
    if k:
        counts.add_drafted_length(min(k, max_position), counts.steps, counts.accepted)
    # Taking every step to draft K tokens (true of draft models and EAGLE, and of ngram when its
    # match is long enough): steps that accepted all K ended without a rejection, every other
    # step tested one position more than it accepted. The proxy's per-step data needs no such
    # assumption; this is the reference, not the measurement. Without per-position counters
    # the steps that accepted all K are unknown, and so are the trials: 0, alpha-hat unknown
    # (counting every step as a rejection would bias it low).
    # Under variable K (a batch-size schedule: drafted tokens are not K x drafts) a step that
    # accepted all of a shorter draft is not in the last position's counter either: the trials
    # are unknown again, not guessed.
    if k and counts.drafted == k * counts.steps:
        counts.trials = counts.accepted + (counts.steps - per_position[k - 1])
    return counts, reset


DRAFTED, STEPS = 0, 1  # what coverage counts: the places in _covered's pair


def _covered(counts: Counts) -> tuple[int, int]:
    """What coverage can count of some counts: draft tokens, steps (an engine that counts
    no tokens, SGLang)."""
    return counts.drafted, counts.steps


@dataclass(frozen=True, slots=True)
class EngineView:
    """vLLM's own counters for one model, and how much of them the proxy saw."""

    model: str
    since_start: Counts
    window: Counts
    stats: SliceStats
    # draft tokens the proxy saw / vLLM counted, between the same scrapes, over the window (or
    # since the start, when vLLM drafted nothing in the window); None: vLLM drafted nothing.
    # Of an engine that counts its steps and no tokens (SGLang), steps seen / steps counted
    coverage: float | None
    running: float | None = None  # vLLM's num_requests_running at the latest scrape


class EngineCounters:
    """Deltas of vLLM's counters per model, since start and over the window.

    With `fresh_start` (specwatch started vLLM itself) the first sample counts from zero;
    otherwise the first sample is the baseline, so traffic from before specwatch is not counted.

    Coverage compares like with like: each sample comes with the draft tokens the proxy had
    seen of that model when it was taken, so the proxy's count between two scrapes sits beside
    vLLM's between the same two, in the same window bucket. Compared with the proxy's count up
    to now, it ran ahead of vLLM's latest scrape by whatever finished since (1.1-1.6 for a
    scrape interval after traffic).
    """

    def __init__(self, length: float, bucket: float, max_position: int, fresh_start: bool) -> None:
        self._max_position = max_position
        self._fresh_start = fresh_start
        self._last: dict[str, EngineSample] = {}
        self._since_start: dict[str, Counts] = {}
        self._window: SlidingWindow[str] = SlidingWindow(length, bucket, max_position)
        self._seen: SlidingWindow[str] = SlidingWindow(length, bucket, max_position)
        self._seen_at_last: dict[str, tuple[int, int]] = {}
        # what the proxy had seen at the first sample: draft tokens, steps
        self._seen_first: dict[str, tuple[int, int]] = {}
        self.resets = 0

    def observe(self, sample: EngineSample, seen: int = 0, seen_steps: int = 0) -> None:
        """A scrape's sample, with the draft tokens and steps of that model the proxy had seen
        by then (running totals)."""
        previous = self._last.get(sample.model)
        self._last[sample.model] = sample
        before, before_steps = self._seen_at_last.get(sample.model, (0, 0))
        self._seen_at_last[sample.model] = seen, seen_steps
        fresh = self._fresh_start or sample.since_zero
        self._seen_first.setdefault(sample.model, (0, 0) if fresh else (seen, seen_steps))
        if previous is None and not fresh:
            return
        between = Counts(self._max_position)
        between.drafted, between.steps = seen - before, seen_steps - before_steps
        self._seen.add(sample.model, sample.ts, between)
        counts, reset = _delta_counts(sample, previous, self._max_position)
        self.resets += reset
        total = self._since_start.setdefault(sample.model, Counts(self._max_position))
        total.merge(counts)
        self._window.add(sample.model, sample.ts, counts)

    def since_start(self) -> dict[str, Counts]:
        return {model: counts.copy() for model, counts in self._since_start.items()}

    def total(self, model: str) -> Counts:
        """One model's counts since the start: a copy."""
        return self._since_start[model].copy()

    def running(self, model: str) -> float | None:
        """vLLM's num_requests_running at the latest scrape (None: never scraped or absent)."""
        last = self._last.get(model)
        return None if last is None else last.running

    def window(self, now: float) -> dict[str, Counts]:
        return self._window.totals(now)

    def views(
        self, window: dict[str, Counts], now: float, confidence: float
    ) -> tuple[EngineView, ...]:
        """Per model, its counts since the start and over `window` (this object's `window`
        at `now`), with the share of them the proxy saw."""
        out = []
        seen = self._seen.totals(now)
        for model, since_start in sorted(self.since_start().items()):
            counts = window.get(model) or Counts(self._max_position)
            # SGLang counts the steps it verified, no tokens: its steps are what is covered
            at = STEPS if not since_start.drafted and since_start.steps > 0 else DRAFTED
            saw = seen.get(model) or Counts(self._max_position)
            unit = _covered(counts)[at]
            coverage = _covered(saw)[at] / unit if unit else None
            total = _covered(since_start)[at]
            if coverage is None and total:
                # vLLM drafted nothing in the window, but since the start it did: the share
                # the proxy saw since the start (0, never None, when it saw none of it)
                coverage = (self._seen_at_last[model][at] - self._seen_first[model][at]) / total
            out.append(
                EngineView(
                    model=model,
                    since_start=since_start,
                    window=counts,
                    stats=SliceStats.of(counts, confidence),
                    coverage=coverage,
                    running=self.running(model),
                )
            )
        return tuple(out)


@dataclass(slots=True)
class LogTotals:
    """Sums of the `SpecDecoding metrics` lines (each counts the interval since the last)."""

    lines: int = 0
    accepted: int = 0
    drafted: int = 0
    running: int | None = None  # from the latest `Engine` line
    waiting: int | None = None
    kv_cache_usage: float | None = None

    def add(self, record: SpecLogRecord | EngineLogRecord) -> None:
        if isinstance(record, SpecLogRecord):
            self.lines += 1
            self.accepted += record.accepted
            self.drafted += record.drafted
        else:
            self.running = record.running
            self.waiting = record.waiting
            self.kv_cache_usage = record.kv_cache_usage
