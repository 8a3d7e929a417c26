"""Frozen records passed between sources, analysis and export.

A request's records (RequestRecord and what it holds) are msgspec Structs, made in C: every
observed request and every cycle-log line makes four, and a frozen dataclass' __init__ sets
each field through object.__setattr__ (about 4% of a replay). Change one with
`msgspec.structs.replace`, as `dataclasses.replace` a dataclass.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import NamedTuple

import msgspec


class SliceKey(NamedTuple):
    """One slice: the unit every count, statistic and zone is kept for.

    A named tuple, not a dataclass: it is hashed for every step-level update, and tuples hash
    and compare in C (about 40% more analysis throughput than a frozen dataclass).
    """

    model: str
    ctx_bucket: str
    task: str


class RequestKey(NamedTuple):
    """The labels of request-level series: the request's slice and its A/B variant."""

    model: str
    ctx_bucket: str
    task: str
    variant: str

    @property
    def slice(self) -> SliceKey:
        return SliceKey(self.model, self.ctx_bucket, self.task)


class SpecDecodeBlock(msgspec.Struct, frozen=True):
    """vLLM's `metrics.speculative_decoding`, reduced to what the analysis needs.

    `drafted[i]` / `accepted[i]` are the tokens drafted and accepted in the i-th speculative
    step, in order. `ordered` is False when vLLM sent only the summary form (histogram), in
    which case the steps were rebuilt from the histogram and their order is unknown.
    """

    num_spec_tokens: int
    drafted: tuple[int, ...]
    accepted: tuple[int, ...]
    ordered: bool = True
    # vLLM's own `mean_acceptance_length`, as it reported it (None: not sent): compared with
    # what the steps say (analysis/causes/rules.py, engine_disagreement)
    reported_tau: float | None = None

    @property
    def steps(self) -> int:
        return len(self.drafted)


class SpecTotals(msgspec.Struct, frozen=True):
    """A request's speculative totals, from an engine that sends no per-step data (llama.cpp's
    `timings.draft_n` / `draft_n_accepted`): tokens drafted and accepted, and the steps where
    the engine says (None: it does not). Nothing per step follows from totals, so none is
    made up: the rate (accepted / drafted) is read from them, alpha-hat (which needs the steps
    with a rejection) is not, and tau only where `steps` is known."""

    drafted: int
    accepted: int
    steps: int | None = None
    engine: str = "llamacpp"


class Latency(msgspec.Struct, frozen=True):
    """Latency figures of one request, in seconds; None where unknown."""

    ttft: float | None = None
    tpot: float | None = None
    e2e: float | None = None
    # where tpot came from: vLLM's per-request metrics, or the stream's own timing (None:
    # vLLM's, or unknown)
    tpot_source: str | None = None


class RequestRecord(msgspec.Struct, frozen=True):
    """One proxied request to an observed endpoint, whatever its outcome."""

    ts: float  # unix seconds at which the request finished
    request_id: str
    model: str
    task: str
    outcome: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    spec: SpecDecodeBlock | None = None
    latency: Latency = msgspec.field(default_factory=Latency)
    variant: str = "spec"
    # an engine without per-step data: its totals (then `spec` is None)
    totals: SpecTotals | None = None
    in_flight: int | None = None  # requests in flight at its upstream as it started, itself too
    config: str | None = None  # the id of the speculative config it ran under (cycle logs)
    # the upstream's HTTP status where it answered (not in cycle logs: they hold no errors)
    status: int | None = None
    # how it asked to decode (conventions.Sampling), from its body; None in older logs
    sampling: str | None = None
    # user data: only with `cycle_log.capture_text`, capped and redacted (store/capture.py)
    prompt_text: str | None = None
    completion_text: str | None = None


@dataclass(frozen=True, slots=True)
class EngineSample:
    """Cumulative counter values for one served model, summed over engines, at time `ts`."""

    ts: float
    model: str
    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: tuple[float, ...]  # position 0 .. K-1
    requests: float  # finished requests (vllm:request_success_total, every reason)
    running: float | None = None  # vllm:num_requests_running now (a gauge), summed over engines
    # counted from zero: the model's counters were absent from an earlier page (TensorRT-LLM
    # and SGLang make theirs at the first count), so all they hold came after it
    since_zero: bool = False


@dataclass(frozen=True, slots=True)
class SpecLogRecord:
    """One `SpecDecoding metrics` line: counts over the interval since the previous line."""

    accepted: int
    drafted: int
    mean_acceptance_length: float | None
    per_position: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class EngineLogRecord:
    engine: int
    running: int | None
    waiting: int | None
    kv_cache_usage: float | None  # fraction, 0..1
    prompt_throughput: float | None  # tokens/s
    generation_throughput: float | None


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The speculative configuration a sidecar's vLLM runs and the track its pod is on: one
    per process (upstream/specconfig.py). `id` is a short hash of the speculative config and
    vLLM's version, the same on every pod given the same inputs."""

    id: str
    method: str | None
    draft: str | None
    num_speculative_tokens: int | None
    schedule: tuple[tuple[int, int, int], ...]
    rejection_sample_method: str | None
    vllm_version: str | None
    track: str
    model: str | None = None  # the target, where the command line says it
    # "lossless" (standard, block), "synthetic" (acceptance faked for testing) or "lossy"
    # (a relaxed acceptance rule): the latter two get no zone (analysis/causes/rules.py)
    verifier: str = "lossless"
    # the serving engine (engines/detect.py); its version is `vllm_version`, named for the
    # first engine and kept so: dashboards and rules read that label
    engine: str = "vllm"
    # drafts are trees of this many branches per node (SGLang's --speculative-eagle-topk > 1):
    # a step's draft is no line of positions, so neither alpha-hat nor per-position is read
    tree_topk: int | None = None
    # the engine's own switch that turns speculation off on low acceptance, as the config sets
    # it ("acceptance_rate_threshold=0.3", TensorRT-LLM#12905): the speculation_switched_off
    # cause names it
    gate: str | None = None

    @property
    def speculation(self) -> str:
        """A short hash of how it speculates (method, draft, K or schedule, verifier), vLLM's
        version left out: equal on two configs whose acceptance should be equal, so that an
        acceptance gap between them is the whole story (gen/canary.py)."""
        canonical = json.dumps(
            [
                self.method,
                self.draft,
                self.num_speculative_tokens,
                [list(row) for row in self.schedule],
                self.rejection_sample_method,
                self.verifier,
            ],
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:10]

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "method": self.method,
            "draft": self.draft,
            "num_speculative_tokens": self.num_speculative_tokens,
            "schedule": [list(row) for row in self.schedule],
            "rejection_sample_method": self.rejection_sample_method,
            "vllm_version": self.vllm_version,
            "track": self.track,
            "model": self.model,
            "verifier": self.verifier,
            "engine": self.engine,
            "engine_version": self.vllm_version,
            "gate": self.gate,
        }


@dataclass(frozen=True, slots=True)
class ABState:
    """The A/B router at one moment, for export: what `/admin/ab` and the metrics show."""

    enabled: bool
    baseline_percent: float
    key_header: str
    rolled_back: bool
    held_by: dict[str, str]  # rollback source -> reason, for the sources holding it
    changed_at: float | None
    switches: dict[tuple[str, str], int]  # (to, source) -> count

    def as_dict(self) -> dict[str, object]:
        return {
            "enabled": self.enabled,
            "baseline_percent": self.baseline_percent,
            "key_header": self.key_header,
            "rolled_back": self.rolled_back,
            "held_by": self.held_by,
            "changed_at": self.changed_at,
            "switches": [
                {"to": to, "source": source, "count": n}
                for (to, source), n in sorted(self.switches.items())
                if n
            ],
        }
