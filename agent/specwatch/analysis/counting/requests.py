"""[compiled] Request-level series: outcomes, tokens, latency histograms and latency objectives
per request slice and variant, and the cap on model names that keeps their labels bounded.

A request's slice here is the ctx bucket of its prompt length (step-level counts use each step's
own position); a request whose prompt length was never learnt is `unknown`.
"""

from __future__ import annotations

from collections import defaultdict

from specwatch import conventions as C
from specwatch.analysis.counting.objectives import ObjectiveCounts
from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets, request_key
from specwatch.core.histogram import Histogram
from specwatch.core.records import RequestKey, RequestRecord
from specwatch.settings import Settings

HISTOGRAMS: dict[str, tuple[float, ...]] = {
    C.REQUEST_ACCEPTANCE_LENGTH: C.ACCEPTANCE_LENGTH_BUCKETS,
    C.TTFT_SECONDS: C.TTFT_BUCKETS,
    C.TPOT_SECONDS: C.TPOT_BUCKETS,
    C.REQUEST_DURATION_SECONDS: C.DURATION_BUCKETS,
}

# Outcomes whose model name came back from the upstream, so it may become a label value.
_SERVED = frozenset({C.Outcome.OBSERVED, C.Outcome.NO_SPEC_METRICS})


class RequestSeries:
    """Counts and histograms per request key; models past `limits.max_models` fold into `other`."""

    def __init__(self, buckets: CtxBuckets, settings: Settings) -> None:
        self._buckets = buckets
        self.objectives = ObjectiveCounts(
            settings.latency_slos, LoadBuckets(settings.load.batch_edges)
        )
        self._max_models = settings.limits.max_models
        self._models: set[str] = set()
        self.folded_models = 0
        self.requests: dict[tuple[RequestKey, str], int] = defaultdict(int)
        self._tokens: dict[RequestKey, tuple[int, int]] = {}  # replaced, never changed
        self._histograms: dict[str, dict[RequestKey, Histogram]] = {n: {} for n in HISTOGRAMS}
        # what snapshots read: a copy per histogram, made again only for those observed since
        # the last snapshot (`_observed`, in the order they were first observed; keyed by the
        # histogram itself, hashed by identity, where a (name, key) tuple is made and hashed
        # at every observation)
        self._copies: dict[str, dict[RequestKey, Histogram]] = {n: {} for n in HISTOGRAMS}
        self._observed: dict[Histogram, tuple[str, RequestKey]] = {}

    def model_label(self, model: str, outcome: str) -> str:
        if model in self._models:
            return model
        if outcome in _SERVED and len(self._models) < self._max_models:
            self._models.add(model)
            return model
        self.folded_models += 1
        return C.OTHER

    def observe(self, name: str, key: RequestKey, value: float | None) -> None:
        if value is None:
            return
        per_key = self._histograms[name]
        histogram = per_key.get(key)
        if histogram is None:
            histogram = per_key[key] = Histogram(HISTOGRAMS[name])
        histogram.observe(value)
        if histogram not in self._observed:
            self._observed[histogram] = (name, key)

    def add(self, record: RequestRecord) -> RequestKey:
        """Count one request (outcome, tokens, latency); its key, with the model's label."""
        model = self.model_label(record.model, record.outcome)
        prompt = record.prompt_tokens
        ctx = self._buckets.label(prompt) if prompt is not None else C.UNKNOWN_CTX
        key = request_key(model, ctx, record.task, record.variant)
        self.requests[key, record.outcome] += 1
        prompt_tokens, completion_tokens = self._tokens.get(key, (0, 0))
        self._tokens[key] = (
            prompt_tokens + (prompt or 0),
            completion_tokens + (record.completion_tokens or 0),
        )
        self.observe(C.TTFT_SECONDS, key, record.latency.ttft)
        self.observe(C.TPOT_SECONDS, key, record.latency.tpot)
        self.observe(C.REQUEST_DURATION_SECONDS, key, record.latency.e2e)
        self.objectives.add(record, model)
        return key

    def tokens(self) -> dict[RequestKey, tuple[int, int]]:
        return dict(self._tokens)

    def histograms(self) -> dict[str, dict[RequestKey, Histogram]]:
        """Copies, kept while a histogram sees no new value (snapshots share them): only
        those observed since the last call are copied again."""
        copies = self._copies
        for histogram, (name, key) in self._observed.items():
            copies[name][key] = histogram.copy()
        self._observed.clear()
        return {name: dict(per_key) for name, per_key in copies.items()}
