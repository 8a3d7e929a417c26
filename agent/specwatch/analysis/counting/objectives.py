"""[compiled] A request against a latency objective: good, missed, an error, or not measured.

What counts (docs/latency-slos.md): a request served (observed, without speculative data, or
unreadable) is judged on its own TTFT and TPOT (decode time over the tokens after the first,
never the inter-token latency: a speculative step writes several tokens at once); one token
has no TPOT and is judged on TTFT alone. An upstream error or a broken answer is an error: the
user got no answer in time. A client that went away, a request specwatch refused or one the
analysis queue dropped is no event of the SLI. A served request without its TTFT, or without
its TPOT past the first token, is `unmeasured`, counted apart.
"""

from __future__ import annotations

from specwatch.conventions import Outcome, SloResult
from specwatch.core.records import RequestRecord
from specwatch.settings.slo import LatencyObjective

_SERVED = frozenset({Outcome.OBSERVED, Outcome.NO_SPEC_METRICS, Outcome.PARSE_ERROR})
_ERRORS = frozenset({Outcome.UPSTREAM_ERROR, Outcome.UPSTREAM_FAILED})


def judged(record: RequestRecord, ttft_seconds: float, tpot_seconds: float) -> str | None:
    """The request's result against thresholds in seconds; None: no event of the SLI."""
    outcome = record.outcome
    if outcome in _ERRORS:
        return SloResult.ERROR
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


class ObjectiveCounts:
    """Per (objective, model label, variant, result) the requests counted since the start."""

    def __init__(self, objectives: tuple[LatencyObjective, ...]) -> None:
        self._objectives = tuple(
            (o.name, o.model, o.task, o.ttft_ms / 1000.0, o.tpot_ms / 1000.0) for o in objectives
        )
        self.counts: dict[tuple[str, str, str, str], int] = {}

    def add(self, record: RequestRecord, model_label: str) -> None:
        """Count `record` against every objective that covers its model (as served) and task;
        `model_label` is the label its series carry (past the cap: `other`)."""
        for name, model, task, ttft, tpot in self._objectives:
            if (model != "*" and model != record.model) or (
                task is not None and task != record.task
            ):
                continue
            result = judged(record, ttft, tpot)
            if result is not None:
                key = (name, model_label, record.variant, result)
                self.counts[key] = self.counts.get(key, 0) + 1
