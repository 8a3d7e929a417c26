"""Names with a fixed meaning: labels and their values, outcomes, zones, sources, headers and
alerts (StrEnums: each value spelled once, compared and formatted as plain text)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Label(StrEnum):
    """Label names of specwatch's series."""

    MODEL = "model"
    CTX_BUCKET = "ctx_bucket"
    TASK = "task"
    POSITION = "position"
    OUTCOME = "outcome"
    ZONE = "zone"
    BOUND = "bound"
    SOURCE = "source"
    REASON = "reason"
    VARIANT = "variant"  # A/B: which upstream served a request
    STATUS_CLASS = "status_class"
    METHOD = "method"  # of a gain: measured or modelled
    DIMENSION = "dimension"  # of the traffic mix: ctx_bucket or task
    PART = "part"  # of an acceptance change: mix, rate or total
    LABEL = "label"  # of a folded label value
    TO = "to"  # of an A/B switch
    VERSION = "version"
    LOAD = "load"  # batch-size bucket: requests in flight when a request started
    DRAFT_LENGTH = "draft_length"  # tokens a step drafted (variable K)
    THRESHOLD = "threshold"  # of the zones' recorded evidence: green or red
    CONFIG = "config"  # the speculative config's id (upstream/specconfig.py)
    TRACK = "track"  # the pod's place in a rollout: stable, canary
    BASELINE_CONFIG = "baseline_config"  # a canary comparison's stable side
    DRAFT = "draft"  # of the config info: the draft model, empty for ngram
    NUM_SPECULATIVE_TOKENS = "num_speculative_tokens"
    VLLM_VERSION = "vllm_version"  # the engine's version (named for the first engine)
    ENGINE = "engine"  # of the config info: vllm, llamacpp (engines/detect.py)
    # of the config info: a hash of the speculative config alone (method, draft, K or schedule,
    # verifier; not vLLM's version): equal on two configs that speculate alike
    SPECULATION = "speculation"
    SIDE = "side"  # of a canary comparison's requests: canary or stable
    KIND = "kind"  # of a cause (CauseKind), of an extreme request (Extreme)
    SLO = "slo"  # a latency objective's name (settings: latency_slos)
    RESULT = "result"  # of a request against a latency objective (SloResult)
    FIELD = "field"  # of a cause's detail: the name of one of its numeric fields
    SAMPLING = "sampling"  # of a request: greedy, sampled or default (Sampling)
    PATH = "path"  # an observed endpoint's path (/v1/chat/completions ...)


SLICE_LABELS: Final = (Label.MODEL, Label.CTX_BUCKET, Label.TASK)
REQUEST_LABELS: Final = (*SLICE_LABELS, Label.VARIANT)
# what every series of the analysis also carries: the config and track of the process that
# counted it (one value each per process), so configs and tracks are never summed together
RUN_LABELS: Final = (Label.CONFIG, Label.TRACK)


class LabelValue(StrEnum):
    """Label values with a fixed meaning."""

    ALL = "all"  # rollup over ctx buckets and tasks, per model
    OTHER = "other"  # where values past a cap, or unknown task names, are folded
    UNKNOWN = "unknown"  # the ctx bucket of a request whose prompt length was never learnt


ALL: Final = LabelValue.ALL
OTHER: Final = LabelValue.OTHER
UNKNOWN_CTX: Final = LabelValue.UNKNOWN
UNKNOWN_CONFIG: Final = "unknown"  # the config label before vLLM's version is known, or none
TRACK_STABLE: Final = "stable"
TRACK_CANARY: Final = "canary"


class Variant(StrEnum):
    SPEC = "spec"
    BASELINE = "baseline"  # A/B traffic to an upstream without speculation


VARIANT_SPEC: Final = Variant.SPEC
VARIANT_BASELINE: Final = Variant.BASELINE


class Bound(StrEnum):
    ESTIMATE = "estimate"
    LOWER = "lower"
    UPPER = "upper"


class GainMethod(StrEnum):
    MEASURED = "measured"  # against a baseline's time per output token
    MODELLED = "modelled"  # tau / (1 + K c)
    INSUFFICIENT = "insufficient"  # a baseline, too few requests to measure the gain


class MixPart(StrEnum):
    MIX = "mix"
    RATE = "rate"
    TOTAL = "total"


class SliceSource(StrEnum):
    """Where a slice's window counts came from (/status `source`)."""

    PROXY = "proxy"
    VLLM_METRICS = "vllm_metrics"


class Outcome(StrEnum):
    """Every proxied request to an observed endpoint lands in exactly one of these."""

    OBSERVED = "observed"  # a speculative-decoding block was read and recorded
    NO_SPEC_METRICS = "no_spec_metrics"  # success, but vLLM sent no metrics block
    UPSTREAM_ERROR = "upstream_error"  # upstream answered with a non-2xx status
    UPSTREAM_FAILED = "upstream_failed"  # unreachable, or broke off: client got a 502 or,
    # mid-stream, an error event
    CLIENT_ABORTED = "client_aborted"  # the client went away before the end
    PARSE_ERROR = "parse_error"  # a 2xx response specwatch could not read
    DROPPED = "dropped"  # the analysis queue was full; the client was served anyway
    REJECTED = "rejected"  # specwatch refused it: too large, too slow, over the cap, or
    # shutting down (an OpenAI-shaped 4xx/5xx; never reached the upstream)


class SloResult(StrEnum):
    """A request against a latency objective (docs/latency-slos.md): good, missed, an error,
    or not measured (no TTFT, or no TPOT past the first token): not counted in the SLI."""

    GOOD = "good"
    TTFT_MISSED = "ttft_missed"
    TPOT_MISSED = "tpot_missed"
    BOTH_MISSED = "both_missed"
    ERROR = "error"
    UNMEASURED = "unmeasured"


class Zone(StrEnum):
    """Per-slice verdicts; `insufficient` means too little evidence for any verdict."""

    GREEN = "green"
    YELLOW = "yellow"
    RED = "red"
    INSUFFICIENT = "insufficient"
    # a synthetic or lossy verifier: acceptance is not the target's (analysis/causes/rules.py)
    NOT_APPLICABLE = "not_applicable"


class TpotSource(StrEnum):
    """Where a request's time per output token came from."""

    VLLM = "vllm"  # its per-request metrics (generation_time_ms, mean_itl_ms)
    STREAM = "stream"  # the stream's own timing: first byte to the end


class CauseKind(StrEnum):
    """Why a slice's acceptance is poor or suspicious (analysis/causes/rules.py has each rule)."""

    DRAFT_CONTEXT_LIMIT = "draft_context_limit"
    NO_ACCEPTANCE = "no_acceptance"
    REPETITION_SUSPECTED = "repetition_suspected"
    SYNTHETIC_VERIFIER = "synthetic_verifier"
    LOSSY_VERIFIER = "lossy_verifier"
    SCHEDULE_NOT_APPLIED = "schedule_not_applied"
    ENGINE_DISAGREEMENT = "engine_disagreement"
    POSITION_CLIFF = "position_cliff"
    FIRST_POSITION_DEFICIT = "first_position_deficit"
    NOT_DRAFTING = "not_drafting"
    COLLAPSE_AFTER_PAUSE = "collapse_after_pause"
    NO_PER_REQUEST_DATA = "no_per_request_data"
    SPECULATION_SWITCHED_OFF = "speculation_switched_off"
    LATER_POSITIONS_COLLAPSE = "later_positions_collapse"
    DRAFT_MISMATCH = "draft_mismatch"
    DECAY_OVER_UPTIME = "decay_over_uptime"
    K0_STILL_COSTS = "k0_still_costs"


class Sampling(StrEnum):
    """How a request asked to decode, from its body: `greedy` (temperature 0 or top_k 1),
    `sampled` (a temperature above 0 and no top_k of 1), `default` (neither stated: the
    server's default applies, which the request does not show)."""

    GREEDY = "greedy"
    SAMPLED = "sampled"
    DEFAULT = "default"


class Extreme(StrEnum):
    """A request that accepted nearly all (`high`: loops) or nearly none (`low`) it tried."""

    HIGH = "high"
    LOW = "low"


class ParseSource(StrEnum):
    """Where a parse error came from (`source` label of the parse-errors counter)."""

    RESPONSE = "response"
    SSE = "sse"
    REQUEST = "request"
    LOG = "log"
    METRICS = "metrics"


class ParseReason(StrEnum):
    """Why an input could not be read (`reason` label of the parse-errors counter)."""

    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    UNENCODABLE = "unencodable"  # a request body too deep to re-encode with include_usage
    BAD_METRICS = "bad_metrics"  # `metrics` is not an object
    BAD_SPEC_BLOCK = "bad_spec_block"  # its fields are not counts
    INCONSISTENT_SPEC_BLOCK = "inconsistent_spec_block"  # its counts disagree
    UNKNOWN_DRAFT_LENGTHS = "unknown_draft_lengths"  # a summary block under variable K
    # a request of several prompts: SGLang details only the first, vLLM none (not read)
    SEVERAL_PROMPTS = "several_prompts"
    BAD_USAGE = "bad_usage"  # a readable response with unreadable usage
    BAD_USAGE_EVENT = "bad_usage_event"  # a stream's usage event without JSON data
    TRUNCATED_STREAM = "truncated_stream"  # no [DONE], or bytes after the last event
    OVERSIZED_EVENT = "oversized_event"  # not SSE as we know it
    ENCODED_BODY = "encoded_body"  # compressed: passed on, not read
    RESPONSE_TOO_LARGE = "response_too_large"
    MEMORY_BUDGET = "memory_budget"  # no room under limits.max_observed_bytes: not read
    UNREACHABLE = "unreachable"  # vLLM's /metrics
    BAD_STATUS = "bad_status"
    BAD_FORMAT = "bad_format"
    BAD_NUMBER = "bad_number"  # a log line
    MISSING_FIELD = "missing_field"
    INCONSISTENT = "inconsistent"


class ABSource(StrEnum):
    """What holds an A/B rollback."""

    ADMIN = "admin"
    FILE = "file"
    AUTO = "auto"


class Switch(StrEnum):
    """The direction of an A/B switch (`to` label)."""

    ROLLED_BACK = "rolled_back"
    ROLLED_FORWARD = "rolled_forward"


class Header(StrEnum):
    """HTTP headers specwatch reads (their defaults where a setting can rename them)."""

    TASK = "X-Task-Type"  # settings tasks.header
    REQUEST_ID = "X-Request-Id"
    AB_KEY = "X-User-Id"  # settings ab.key_header
    SIM_FAIL = "X-Sim-Fail"  # the simulator's injected faults (tests)
    AUTHORIZATION = "Authorization"


class AlertName(StrEnum):
    SLICE_RED = "SpecDecodeSliceRed"
    SLICE_YELLOW = "SpecDecodeSliceYellow"
    BURN_FAST = "SpecDecodeErrorBudgetBurnFast"
    BURN_SLOW = "SpecDecodeErrorBudgetBurnSlow"
    SLOWER_THAN_BASELINE = "SpecDecodeSlowerThanBaseline"
    SLOWER_AT_LOAD = "SpecDecodeSlowerAtLoad"
    DRIFT = "SpecDecodeAcceptanceDrift"
    SIDECAR_DOWN = "SpecDecodeSidecarDown"
    VLLM_DOWN = "SpecDecodeVllmDown"
    COVERAGE_LOW = "SpecDecodeCoverageLow"
    NO_PER_REQUEST_DATA = "SpecDecodeNoPerRequestData"
    PARSE_ERRORS = "SpecDecodeParseErrors"
    SIDECAR_ERRORS = "SpecDecodeSidecarErrors"
    ROLLED_BACK = "SpecDecodeRolledBack"
    OUTPUT_DIVERGENCE = "SpecDecodeOutputDivergence"
    OUTPUT_DIVERGENCE_HIGH = "SpecDecodeOutputDivergenceHigh"
    CANARY_WORSE = "SpecDecodeCanaryWorse"
    CANARY_SLOWER = "SpecDecodeCanarySlower"
    LATENCY_BURN_FAST = "SpecDecodeLatencyBudgetBurnFast"
    LATENCY_BURN_SLOW = "SpecDecodeLatencyBudgetBurnSlow"
    CANARY_LATENCY_BURN = "SpecDecodeCanaryLatencyBurn"
    SIDECAR_ADDED_LATENCY = "SpecDecodeSidecarAddedLatency"
