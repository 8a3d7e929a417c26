"""The simulator's vLLM metrics: `/metrics` under vLLM's own names, and its periodic stats lines.

Counted step by step as vLLM does, so an aborted request's steps are counted even though no
response carries them.
"""

from __future__ import annotations

import os
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from specwatch import conventions as C
from specwatch.sim.acceptance import Step


class IntervalStats:
    """What vLLM's periodic stats lines report: counts since the previous line."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.drafts = 0
        self.drafted = 0
        self.accepted = 0
        self.per_position: list[int] = []
        self.generated = 0
        self.prompt = 0

    def step(self, step: Step) -> None:
        self.drafts += 1
        self.drafted += step.drafted
        self.accepted += step.accepted
        if len(self.per_position) < step.drafted:
            self.per_position += [0] * (step.drafted - len(self.per_position))
        for i in range(step.accepted):
            self.per_position[i] += 1

    def lines(self, seconds: float, running: int, waiting: int) -> list[str]:
        """The `Engine 000` and `SpecDecoding metrics` lines vLLM 0.32 would print."""
        stamp = time.strftime("%m-%d %H:%M:%S")
        prefix = f"(APIServer pid={os.getpid()}) INFO {stamp}"
        out = [
            f"{prefix} [loggers.py:335] Engine 000: Avg prompt throughput: "
            f"{self.prompt / seconds:.1f} tokens/s, Avg generation throughput: "
            f"{self.generated / seconds:.1f} tokens/s, Running: {running} reqs, Waiting: "
            f"{waiting} reqs, CPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%"
        ]
        if self.drafts:
            per_position = ", ".join(f"{n / self.drafts:.3f}" for n in self.per_position)
            out.append(
                f"{prefix} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
                f"{1 + self.accepted / self.drafts:.2f}, Accepted throughput: "
                f"{self.accepted / seconds:.2f} tokens/s, Drafted throughput: "
                f"{self.drafted / seconds:.2f} tokens/s, Accepted: {self.accepted} tokens, "
                f"Drafted: {self.drafted} tokens, Per-position acceptance rate: {per_position}, "
                f"Avg Draft acceptance rate: {100 * self.accepted / max(1, self.drafted):.1f}%"
            )
        return out


class TrtllmCounters:
    """TensorRT-LLM's speculative counters as its MetricsCollector makes them (tensorrt_llm/
    metrics/collector.py): labelled `model_name` and `engine_type`; tokens drafted and
    accepted (its iteration stats), and per `token_position` (its requests' perf metrics)."""

    def __init__(self, model: str) -> None:
        self.registry = CollectorRegistry()
        labels = {"model_name": model, "engine_type": "trtllm"}
        self._labels = labels

        def counter(name: str, doc: str, *extra: str) -> Counter:
            return Counter(name, doc, [*labels, *extra], registry=self.registry)

        self.draft_tokens = counter(C.TRTLLM_NUM_DRAFT_TOKENS, "Total number of draft tokens")
        self.accepted = counter(C.TRTLLM_NUM_ACCEPTED_TOKENS, "Total number of accepted tokens")
        self.drafted_at = counter(
            C.TRTLLM_DRAFTED_PER_POS, "Drafted per position.", "token_position"
        )
        self.accepted_at = counter(
            C.TRTLLM_ACCEPTED_PER_POS, "Accepted per position.", "token_position"
        )

    def step(self, step: Step) -> None:
        self.draft_tokens.labels(**self._labels).inc(step.drafted)
        self.accepted.labels(**self._labels).inc(step.accepted)
        for at in range(step.drafted):
            self.drafted_at.labels(**self._labels, token_position=str(at)).inc()
        for at in range(step.accepted):
            self.accepted_at.labels(**self._labels, token_position=str(at)).inc()


class SimMetrics:
    """vLLM's own metric names, on a registry of this server's."""

    def totals(self) -> dict[str, float]:
        """Steps, draft tokens and accepted tokens counted so far (other engines' pages)."""
        value = self.registry.get_sample_value
        return {
            "drafts": value(C.VLLM_NUM_DRAFTS + "_total", self._labels) or 0.0,
            "draft_tokens": value(C.VLLM_NUM_DRAFT_TOKENS + "_total", self._labels) or 0.0,
            "accepted": value(C.VLLM_NUM_ACCEPTED_TOKENS + "_total", self._labels) or 0.0,
        }

    def __init__(self, model: str, num_spec_tokens: int, trtllm: bool = False) -> None:
        self.registry = CollectorRegistry()
        labels = ["model_name", "engine"]
        self._labels = {"model_name": model, "engine": "0"}

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, labels, registry=self.registry)

        self.drafts = counter(C.VLLM_NUM_DRAFTS, "Number of spec decoding drafts.")
        self.draft_tokens = counter(C.VLLM_NUM_DRAFT_TOKENS, "Number of draft tokens.")
        self.accepted = counter(C.VLLM_NUM_ACCEPTED_TOKENS, "Number of accepted tokens.")
        self.per_pos = Counter(
            C.VLLM_NUM_ACCEPTED_PER_POS,
            "Accepted tokens per draft position.",
            [*labels, "position"],
            registry=self.registry,
        )
        self.prompt_tokens = counter(C.VLLM_PROMPT_TOKENS, "Number of prefill tokens processed.")
        self.generation_tokens = counter(C.VLLM_GENERATION_TOKENS, "Number of generation tokens.")
        self.ttft = Histogram(
            C.VLLM_TTFT_SECONDS, "Time to first token.", labels, registry=self.registry
        )
        self.e2e = Histogram(
            C.VLLM_E2E_SECONDS, "End-to-end request latency.", labels, registry=self.registry
        )
        self.running = Gauge(
            C.VLLM_REQUESTS_RUNNING, "Running requests.", labels, registry=self.registry
        )
        self.finished = Counter(
            C.VLLM_REQUEST_SUCCESS,
            "Finished requests by reason.",
            [*labels, "finished_reason"],
            registry=self.registry,
        )
        self.interval = IntervalStats()
        # TensorRT-LLM's own counters, made only for a simulator answering as it
        self.trtllm = TrtllmCounters(model) if trtllm else None
        # Like vLLM, every series exists from the start at 0: a scraper's first sample is a
        # true baseline, not one taken after the first requests.
        for family in (
            self.drafts,
            self.draft_tokens,
            self.accepted,
            self.prompt_tokens,
            self.generation_tokens,
        ):
            family.labels(**self._labels)
        for position in range(num_spec_tokens):
            self.per_pos.labels(**self._labels, position=str(position))
        for reason in ("stop", "length", "abort", "error"):
            self.finished.labels(**self._labels, finished_reason=reason)

    def step(self, step: Step) -> None:
        labels = self._labels
        self.generation_tokens.labels(**labels).inc(step.emitted)
        self.interval.generated += step.emitted
        if not step.drafted:
            return
        self.drafts.labels(**labels).inc()
        self.draft_tokens.labels(**labels).inc(step.drafted)
        self.accepted.labels(**labels).inc(step.accepted)
        for position in range(step.accepted):
            self.per_pos.labels(**labels, position=str(position)).inc()
        self.interval.step(step)
        if self.trtllm is not None:
            self.trtllm.step(step)

    def labels(self) -> dict[str, str]:
        return self._labels

    def total(self, name: str) -> float:
        """The value of counter `name` (vLLM's name, without `_total`)."""
        return self.registry.get_sample_value(name + "_total", self._labels) or 0.0
