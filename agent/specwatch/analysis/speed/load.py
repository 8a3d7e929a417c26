"""[compiled] Speculation by load: acceptance and decode time per batch-size bucket, and the K
table.

A request's load is the number of requests in flight at its upstream when it started, itself
included (the proxy counts them exactly): about the batch it joined. Drafting costs compute
that is free at batch 1 and not at batch 64, so the gain of speculation moves with it. The
load dimension is crossed with the model only (not with ctx x task), in buckets with bounded
labels (`load.batch_edges`).

The K table is what vLLM's `num_speculative_tokens_per_batch_size` takes: inclusive
[first, last, K] batch-size ranges, K = 0 where speculation does not pay. Per bucket: where
A/B baseline traffic gives a measured gain, the K the bucket ran at (its commonest draft
length: under a schedule not the largest) when speculation is measured faster
and 0 when slower (the point estimate decides; the interval is reported); elsewhere the
advisor's best K from the bucket's per-position acceptance and the cost ratio. Buckets without
traffic take their lower neighbour's K (the upper one's at the bottom), the last range ends at
the largest load seen, and neighbours with the same K merge.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import LoadBuckets
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.speed.advisor import advice_for
from specwatch.analysis.speed.speedup import MEASURED, MODELLED, cost_from_times, measured_gain
from specwatch.conventions import VARIANT_BASELINE, VARIANT_SPEC
from specwatch.core.records import RequestRecord
from specwatch.settings import Settings

# one bucket's choice: K (-1: no evidence), method, gain, its lower and upper bound
_Choice = tuple[int, str | None, float | None, float | None, float | None]


@dataclass(slots=True)
class _Cell:
    counts: Counts
    spec: Sums
    baseline: Sums


@dataclass(frozen=True, slots=True)
class LoadRange:
    """One batch-size range of the K table, with the evidence behind its K."""

    first: int
    last: int
    k: int
    method: str | None  # measured | modelled | None (no traffic: a neighbour's K)
    gain: float | None
    lower: float | None
    upper: float | None
    spec_requests: int
    baseline_requests: int
    label: str = ""  # the load bucket's label (`2-4`): the `load` label of its series


@dataclass(frozen=True, slots=True)
class KTable:
    model: str
    k_in_use: int
    ranges: tuple[LoadRange, ...]  # one per load bucket up to the largest load seen

    def schedule(self) -> list[list[int]]:
        """vLLM's `num_speculative_tokens_per_batch_size`: neighbours with one K merged."""
        merged: list[list[int]] = []
        for row in self.ranges:
            if merged and merged[-1][2] == row.k and merged[-1][1] + 1 == row.first:
                merged[-1][1] = row.last
            else:
                merged.append([row.first, row.last, row.k])
        return merged


class LoadTable:
    """Counts and decode-time sums per (model, load bucket), since the start."""

    def __init__(self, buckets: LoadBuckets, max_position: int) -> None:
        self.buckets = buckets
        self._max_position = max_position
        self._cells: dict[tuple[str, int], _Cell] = {}
        self._largest: dict[str, int] = {}

    def _cell(self, key: tuple[str, int]) -> _Cell:
        cell = self._cells.get(key)
        if cell is None:
            cell = self._cells[key] = _Cell(Counts(self._max_position), Sums(), Sums())
        return cell

    def add(
        self,
        model: str,
        in_flight: int,
        counts: Counts | None,
        baseline: bool,
        tpot: float | None,
        tokens: int | None,
    ) -> None:
        """One request: its step counts (speculative requests) and its decode time."""
        cell = self._cell((model, self.buckets.index(in_flight)))
        self._largest[model] = max(self._largest.get(model, 0), in_flight)
        if counts is not None:
            cell.counts.merge(counts)
        # isinf and isnan, not isfinite (the compiled build's idiom)
        if (
            tpot is not None
            and tokens is not None
            and tokens >= 2
            and not math.isinf(tpot)
            and not math.isnan(tpot)
        ):
            decode = tokens - 1
            (cell.baseline if baseline else cell.spec).add(tpot * decode, decode)

    def set_cell(self, model: str, index: int, counts: Counts, spec: Sums, baseline: Sums) -> None:
        """A cell whose sums were added up elsewhere (fleet analysis, in SQL); with
        set_largest, the table `add` would have built from the same requests."""
        self._cells[model, index] = _Cell(counts, spec, baseline)
        self._largest.setdefault(model, 0)

    def set_largest(self, model: str, in_flight: int) -> None:
        self._largest[model] = in_flight

    def models(self) -> list[str]:
        return sorted(self._largest)

    def merge(self, other: LoadTable) -> None:
        for key, theirs in other._cells.items():
            mine = self._cell(key)
            mine.counts.merge(theirs.counts)
            mine.spec.merge(theirs.spec)
            mine.baseline.merge(theirs.baseline)
        for model, largest in other._largest.items():
            self._largest[model] = max(self._largest.get(model, 0), largest)

    def cells(self, model: str) -> dict[int, tuple[Counts, Sums, Sums]]:
        """Per bucket index: the model's step counts, and decode (seconds, tokens) sums of
        speculation and of the baseline."""
        return {
            i: (cell.counts, cell.spec, cell.baseline)
            for (m, i), cell in sorted(self._cells.items())
            if m == model
        }

    def measured_cost(self, model: str, min_requests: int) -> float | None:
        """c from the model's decode times over every load (speculation's and the A/B
        baseline's, each with `min_requests` or more), kept below 1; None without them."""
        spec, base, counts = Sums(), Sums(), Counts(self._max_position)
        for (m, _), cell in self._cells.items():
            if m == model:
                spec.merge(cell.spec)
                base.merge(cell.baseline)
                counts.merge(cell.counts)
        if min(spec.requests, base.requests) < min_requests or spec.y <= 0 or base.x <= 0:
            return None
        cost = cost_from_times(spec.x / spec.y, base.x / base.y, counts)
        return None if cost is None else min(0.99, cost)

    def k_table(
        self, model: str, cost_ratio: float, confidence: float, min_requests: int
    ) -> KTable | None:
        """The K table of one model, or None before it ran speculation at any load."""
        cells = {i: c for (m, i), c in self._cells.items() if m == model}
        k_in_use = max((c.counts.max_drafted for c in cells.values()), default=0)
        if k_in_use <= 0:
            return None
        last = self.buckets.index(self._largest[model])
        chosen: list[_Choice] = []
        for index in range(last + 1):
            cell = cells.get(index)
            chosen.append(
                _bucket_k(cell, k_in_use, cost_ratio, confidence, min_requests)
                if cell is not None
                else (-1, None, None, None, None)
            )
        _fill_gaps(chosen)
        ranges = []
        for index, (k, method, gain, lower, upper) in enumerate(chosen):
            first, bound = self.buckets.ranges[index]
            end = self._largest[model] if index == last or bound is None else bound
            cell = cells.get(index)
            ranges.append(
                LoadRange(
                    first=first,
                    last=end,
                    k=k,
                    method=method,
                    gain=gain,
                    lower=lower,
                    upper=upper,
                    spec_requests=cell.spec.requests if cell else 0,
                    baseline_requests=cell.baseline.requests if cell else 0,
                    label=self.buckets.labels[index],
                )
            )
        return KTable(model=model, k_in_use=k_in_use, ranges=tuple(ranges))


def _bucket_k(
    cell: _Cell, k_in_use: int, cost_ratio: float, confidence: float, min_requests: int
) -> _Choice:
    if cell.spec.requests >= min_requests and cell.baseline.requests >= min_requests:
        gain = measured_gain(cell.spec, cell.baseline, confidence)
        if gain is not None:
            # the K this load ran at (under a schedule, not the largest): its commonest length
            drafting = cell.counts.steps_by_drafted[1:]
            ran = 1 + drafting.index(max(drafting)) if any(drafting) else k_in_use
            k = ran if gain.ratio >= 1.0 else 0
            return k, MEASURED, gain.ratio, gain.lower, gain.upper
    stats = SliceStats.of(cell.counts, confidence)
    advice = advice_for(cell.counts, stats, cost_ratio)
    if advice is None:
        return -1, None, None, None, None  # no speculative steps here: a neighbour's K
    return advice.best_k, MODELLED, advice.best_speedup, None, None


def _fill_gaps(
    chosen: list[tuple[int, str | None, float | None, float | None, float | None]],
) -> None:
    """Buckets without evidence (K -1) take the K below them, or above at the bottom."""
    known = [i for i, row in enumerate(chosen) if row[0] >= 0]
    if not known:
        for i in range(len(chosen)):
            chosen[i] = (0, None, None, None, None)
        return
    for i, row in enumerate(chosen):
        if row[0] < 0:
            below = [j for j in known if j < i]
            source = below[-1] if below else known[0]
            chosen[i] = (chosen[source][0], None, None, None, None)


class WindowedLoad:
    """The load table over the last `length` seconds, in `periods` whole periods: what the
    per-bucket gain gauges and the slower-at-load alert read, so a fixed bucket recovers.
    Time comes from the records. Reading merges the periods: O(periods x cells), small."""

    def __init__(
        self, buckets: LoadBuckets, max_position: int, length: float, periods: int = 6
    ) -> None:
        self._buckets = buckets
        self._max_position = max_position
        self._period = length / periods
        self._periods = periods
        self._tables: deque[tuple[int, LoadTable]] = deque()

    def table_at(self, ts: float) -> LoadTable | None:
        """The period's table a record at `ts` goes into (None: older than the window)."""
        index = int(ts // self._period)
        tables = self._tables
        if not tables or tables[-1][0] < index:
            tables.append((index, LoadTable(self._buckets, self._max_position)))
            while tables[0][0] <= index - self._periods:
                tables.popleft()
            return tables[-1][1]
        for held, table in reversed(tables):
            if held == index:
                return table
        return None  # a late record for a period without a table: counted since the start

    def table(self, now: float) -> LoadTable:
        oldest = int(now // self._period) - self._periods + 1
        out = LoadTable(self._buckets, self._max_position)
        for index, table in self._tables:
            if index >= oldest:
                out.merge(table)
        return out


class LoadTracker:
    """Per model and batch-size bucket, since the start (what `advise` reads) and over the
    load window (what the gauges and SpecDecodeSlowerAtLoad read)."""

    def __init__(self, settings: Settings) -> None:
        self._cfg = settings
        buckets, positions = LoadBuckets(settings.load.batch_edges), settings.limits.max_position
        self.since_start = LoadTable(buckets, positions)
        self._window = WindowedLoad(buckets, positions, settings.load.window_seconds)

    def add(self, record: RequestRecord, model: str, baseline: bool, counts: Counts | None) -> None:
        """A request with a known load; `counts` its speculative steps (None: a baseline's or
        one without)."""
        if record.in_flight is not None:
            tpot, tokens = record.latency.tpot, record.completion_tokens
            self.since_start.add(model, record.in_flight, counts, baseline, tpot, tokens)
            recent = self._window.table_at(record.ts)
            if recent is not None:
                recent.add(model, record.in_flight, counts, baseline, tpot, tokens)

    def k_tables(self, now: float | None) -> tuple[KTable, ...]:
        """The K table of every model that ran speculation, since the start (`now` None) or
        over the load window ending at `now`."""
        table = self.since_start if now is None else self._window.table(now)
        cfg, confidence = self._cfg.speedup, self._cfg.zones.confidence
        tables = [
            table.k_table(
                m,
                cfg.cost_ratio.get(m, cfg.default_cost_ratio),
                confidence,
                cfg.min_baseline_requests,
            )
            for m in table.models()
        ]
        return tuple(table for table in tables if table is not None)


@dataclass(frozen=True, slots=True)
class LoadCell:
    """One (model, batch-size bucket) since the start: what /metrics exports per load."""

    model: str
    load: str  # the bucket's label, e.g. `2-4`
    accepted: int
    trials: int
    decode_seconds: dict[str, float]  # per variant
    decode_tokens: dict[str, float]


def load_cells(table: LoadTable) -> tuple[LoadCell, ...]:
    out = []
    for model in table.models():
        for index, (counts, spec, baseline) in table.cells(model).items():
            out.append(
                LoadCell(
                    model=model,
                    load=table.buckets.labels[index],
                    accepted=counts.accepted,
                    trials=counts.trials,
                    decode_seconds={VARIANT_SPEC: spec.x, VARIANT_BASELINE: baseline.x},
                    decode_tokens={VARIANT_SPEC: spec.y, VARIANT_BASELINE: baseline.y},
                )
            )
    return tuple(out)
