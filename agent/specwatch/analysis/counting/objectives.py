"""[compiled] A request against a latency objective: good, missed, an error, or not measured.

What counts (docs/latency-slos.md): a request served (observed, without speculative data, or
unreadable) is judged on its own TTFT and TPOT (decode time over the tokens after the first,
never the inter-token latency: a speculative step writes several tokens at once); one token
has no TPOT and is judged on TTFT alone. An upstream error or a broken answer is an error: the
user got no answer in time; but a 4xx the request itself earned (not 408 or 429) is no
event. A client that went away, a request specwatch refused or one the analysis queue
dropped is no event of the SLI. A served request without its TTFT, or without
its TPOT past the first token, is `unmeasured`, counted apart.

Attainment's interval takes the minute as the unit of sampling: a request's chance to meet an
objective moves with the load and the traffic of its minute, so requests of one minute are
not independent trials. Per objective, model and variant the requests are summed per minute
(a cluster: the minute the request finished in, closed when a later minute's request comes)
and the cluster sums' squares kept, for the same cluster-robust Wilson interval as the
acceptance's (stats.proportion_interval, minutes for requests). tests/unit/analysis/
test_attainment_coverage.py measures what it covers on minutes with shocks of load.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specwatch.analysis.counting.slicing import LoadBuckets
from specwatch.analysis.counting.stats import Interval, proportion_interval
from specwatch.conventions import VARIANT_SPEC, Outcome, SloResult
from specwatch.core.records import RequestRecord
from specwatch.settings.slo import LatencyObjective

GOOD, BAD = "good", "bad"  # the results by load: met the objective, or not
_SERVED = frozenset({Outcome.OBSERVED, Outcome.NO_SPEC_METRICS, Outcome.PARSE_ERROR})
_ERRORS = frozenset({Outcome.UPSTREAM_ERROR, Outcome.UPSTREAM_FAILED})


def _clients_fault(status: int | None) -> bool:
    """A 4xx the request earned (a bad body, a prompt past the context, an unknown model):
    no event of the SLI. 408 and 429 are the server's (too slow, too busy): bad requests."""
    return status is not None and 400 <= status < 500 and status != 408 and status != 429


def judged(record: RequestRecord, ttft_seconds: float, tpot_seconds: float) -> str | None:
    """The request's result against thresholds in seconds; None: no event of the SLI."""
    outcome = record.outcome
    if outcome in _ERRORS:
        return None if _clients_fault(record.status) else SloResult.ERROR
    if outcome not in _SERVED:
        return None
    ttft, tpot = record.latency.ttft, record.latency.tpot
    if ttft is None:
        return SloResult.UNMEASURED
    if tpot is None and (record.completion_tokens is None or record.completion_tokens > 1):
        return SloResult.UNMEASURED
    late = ttft > ttft_seconds
    slow = tpot is not None and tpot > tpot_seconds
    if late:
        return SloResult.BOTH_MISSED if slow else SloResult.TTFT_MISSED
    return SloResult.TPOT_MISSED if slow else SloResult.GOOD


def budget_left(attainment: float, objective: float) -> float:
    """The share of the error budget (1 - objective) not spent at `attainment`: 1 untouched,
    0 spent, negative past it."""
    return 1.0 - (1.0 - attainment) / (1.0 - objective)


class Minutes:
    """Good requests over the SLI's events, summed per minute, with the minutes' squares."""

    def __init__(self) -> None:
        self.minute = -1  # the open minute, -1 before the first event
        self.good = 0  # in the open minute
        self.events = 0
        self.clusters = 0  # closed minutes, and their sums
        self.sum_good = 0
        self.sum_events = 0
        self.good_squares = 0
        self.cross = 0
        self.event_squares = 0

    def add(self, minute: int, good: bool) -> None:
        if minute != self.minute and self.events > 0:
            self._close()
        if self.events == 0:
            self.minute = minute
        self.events += 1
        self.good += 1 if good else 0

    def _close(self) -> None:
        g, n = self.good, self.events
        self.clusters += 1
        self.sum_good += g
        self.sum_events += n
        self.good_squares += g * g
        self.cross += g * n
        self.event_squares += n * n
        self.good = self.events = 0

    def interval(self, confidence: float) -> Interval | None:
        """Attainment (good / events) with the minute-robust Wilson interval, the open
        minute counted as a cluster."""
        g, n = self.good, self.events
        return proportion_interval(
            float(self.clusters + (1 if n > 0 else 0)),
            float(self.sum_good + g),
            float(self.sum_events + n),
            float(self.good_squares + g * g),
            float(self.cross + g * n),
            float(self.event_squares + n * n),
            confidence,
        )


@dataclass(frozen=True, slots=True)
class LatencyView:
    """What a snapshot holds of the latency objectives, since the start: per (objective, model,
    variant, result) the requests; per (objective, model, variant) attainment with its
    interval; per (objective, model, load bucket, good or bad) speculation's SLI events (the
    canary's burn is compared with stable's at the same load); the objectives."""

    counts: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    attainment: dict[tuple[str, str, str], Interval] = field(default_factory=dict)
    by_load: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    objectives: tuple[LatencyObjective, ...] = ()


class ObjectiveCounts:
    """Per (objective, model label, variant, result) the requests counted since the start; per
    (objective, model label, variant) the SLI's events by minute (`minutes`); per (objective,
    model label, load bucket, good or bad) speculation's SLI events whose load is known."""

    def __init__(self, objectives: tuple[LatencyObjective, ...], loads: LoadBuckets) -> None:
        self._given = objectives
        self._objectives = tuple(
            (o.name, o.model, o.task, o.ttft_ms / 1000.0, o.tpot_ms / 1000.0) for o in objectives
        )
        self._loads = loads
        self.counts: dict[tuple[str, str, str, str], int] = {}
        self.minutes: dict[tuple[str, str, str], Minutes] = {}
        self.by_load: dict[tuple[str, str, str, str], int] = {}

    def add(self, record: RequestRecord, model_label: str) -> None:
        """Count `record` against every objective that covers its model (as served) and task;
        `model_label` is the label its series carry (past the cap: `other`)."""
        for name, model, task, ttft, tpot in self._objectives:
            if (model != "*" and model != record.model) or (
                task is not None and task != record.task
            ):
                continue
            result = judged(record, ttft, tpot)
            if result is None:
                continue
            key = (name, model_label, record.variant, result)
            self.counts[key] = self.counts.get(key, 0) + 1
            if result != SloResult.UNMEASURED:
                group = (name, model_label, record.variant)
                minutes = self.minutes.get(group)
                if minutes is None:
                    minutes = self.minutes[group] = Minutes()
                good = result == SloResult.GOOD
                minutes.add(int(record.ts // 60.0), good)
                if record.variant == VARIANT_SPEC and record.in_flight is not None:
                    load = self._loads.label(record.in_flight)
                    cell = (name, model_label, load, GOOD if good else BAD)
                    self.by_load[cell] = self.by_load.get(cell, 0) + 1

    def view(self, confidence: float) -> LatencyView:
        """A copy for a snapshot, attainment's intervals at `confidence`."""
        attainment = {}
        for group, minutes in self.minutes.items():
            interval = minutes.interval(confidence)
            if interval is not None:
                attainment[group] = interval
        return LatencyView(dict(self.counts), attainment, dict(self.by_load), self._given)
