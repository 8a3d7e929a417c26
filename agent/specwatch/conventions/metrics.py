"""Every specwatch_* family (name, type, help, labels) but the acceptance counters
(conventions/counters.py), entered in the metric table (conventions/table.py). With
counters.py and recorded.py, the only files where those names are spelled."""

from __future__ import annotations

from typing import Final

from specwatch.conventions.counters import *  # noqa: F403  (first in the metric table)
from specwatch.conventions.names import REQUEST_LABELS, RUN_LABELS, SLICE_LABELS, Label
from specwatch.conventions.table import Kind, _metric

_C, _G, _H = Kind.COUNTER, Kind.GAUGE, Kind.HISTOGRAM
_SLICE = (*SLICE_LABELS, *RUN_LABELS)
_REQUEST = (*REQUEST_LABELS, *RUN_LABELS)
_MODEL = (Label.MODEL, *RUN_LABELS)

# Request-level series: the ctx bucket of the prompt length, and the A/B variant.
REQUESTS: Final = _metric(
    "specwatch_requests",
    _C,
    "Requests to observed endpoints, each in exactly one outcome; ctx_bucket is the prompt "
    "length's bucket.",
    (*_REQUEST, Label.OUTCOME),
)
PROMPT_TOKENS: Final = _metric("specwatch_prompt_tokens", _C, "Prompt tokens.", _REQUEST)
COMPLETION_TOKENS: Final = _metric(
    "specwatch_completion_tokens", _C, "Completion tokens.", _REQUEST
)
REQUEST_ACCEPTANCE_LENGTH: Final = _metric(
    "specwatch_request_acceptance_length",
    _H,
    "Mean acceptance length (tau) of each request.",
    _REQUEST,
)
TTFT_SECONDS: Final = _metric(
    "specwatch_time_to_first_token_seconds",
    _H,
    "Time to first token, as vLLM measured it (else as the proxy did).",
    _REQUEST,
)
TPOT_SECONDS: Final = _metric(
    "specwatch_time_per_output_token_seconds",
    _H,
    "Time per output token after the first.",
    _REQUEST,
)
REQUEST_DURATION_SECONDS: Final = _metric(
    "specwatch_request_duration_seconds",
    _H,
    "Request duration as the client saw it through the proxy.",
    _REQUEST,
)

ACCEPTANCE_LENGTH_BUCKETS: Final = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0)
TTFT_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TPOT_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0)
DURATION_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# Sidecar judgements (windowed, per pod).
ZONE: Final = _metric(
    "specwatch_zone", _G, "1 for the slice's current zone, 0 for the others.", (*_SLICE, Label.ZONE)
)
ACCEPTANCE_ALPHA: Final = _metric(
    "specwatch_acceptance_alpha",
    _G,
    "Per-token acceptance alpha-hat over the window, with its request-level bounds.",
    (*_SLICE, Label.BOUND),
)
ACCEPTANCE_RATE: Final = _metric(
    "specwatch_acceptance_rate",
    _G,
    "vLLM's acceptance rate (accepted / drafted) over the window.",
    _SLICE,
)
MEAN_ACCEPTANCE_LENGTH: Final = _metric(
    "specwatch_mean_acceptance_length", _G, "Mean tokens per step over the window.", _SLICE
)
WINDOW_TRIALS: Final = _metric(
    "specwatch_window_acceptance_trials", _G, "Acceptance trials in the window (evidence).", _SLICE
)
WINDOW_REQUESTS: Final = _metric(
    "specwatch_window_requests", _G, "Requests with steps in the window (evidence).", _SLICE
)
ESTIMATED_GAIN_RATIO: Final = _metric(
    "specwatch_estimated_gain_ratio",
    _G,
    "Speedup of speculation over none: measured against a baseline, or modelled as "
    "tau / (1 + K c), with its request-level bounds. An upper bound below 1: speculation is "
    "slower.",
    (*_SLICE, Label.METHOD, Label.BOUND),
)
TPOT_WINDOW_SECONDS: Final = _metric(
    "specwatch_tpot_window_seconds",
    _G,
    "Decode time per output token of the slice's speculative requests over the window (the "
    "ratio of their sums), with its request-level bounds (log scale).",
    (*_SLICE, Label.BOUND),
)
DRIFT_STATISTIC: Final = _metric(
    "specwatch_drift_statistic",
    _G,
    "The slice's lower CUSUM on acceptance against its baseline (alarm above the threshold); "
    "absent while the slice has too little baseline.",
    _SLICE,
)
DRIFT_ALARM: Final = _metric(
    "specwatch_drift_alarm", _G, "1 while the slice's drift alarm is on.", _SLICE
)
ADVISED_NUM_SPECULATIVE_TOKENS: Final = _metric(
    "specwatch_advised_num_speculative_tokens",
    _G,
    "The draft length K with the best predicted speedup from measured per-position "
    "acceptance over the window (0: speculation does not pay).",
    _MODEL,
)
# By draft length (variable K), per model since the start: rate and tau mix lengths.
_DRAFT_LENGTH = (*_MODEL, Label.DRAFT_LENGTH)
DRAFT_LENGTH_STEPS: Final = _metric(
    "specwatch_draft_length_steps",
    _C,
    "Steps that drafted `draft_length` tokens (the largest length: that many or more; 0: "
    "steps that drafted nothing, where vLLM lists them).",
    _DRAFT_LENGTH,
)
DRAFT_LENGTH_ACCEPTED: Final = _metric(
    "specwatch_draft_length_accepted_tokens",
    _C,
    "Tokens accepted by the steps that drafted `draft_length` tokens.",
    _DRAFT_LENGTH,
)

# By load (analysis/speed/load.py): model x batch-size bucket, never crossed with ctx x task.
_LOAD = (*_MODEL, Label.LOAD)
LOAD_ACCEPTED_TOKENS: Final = _metric(
    "specwatch_load_accepted_tokens",
    _C,
    "Draft tokens accepted, by the batch-size bucket the request started in.",
    _LOAD,
)
LOAD_ACCEPTANCE_TRIALS: Final = _metric(
    "specwatch_load_acceptance_trials",
    _C,
    "Acceptance trials (alpha-hat's denominator), by batch-size bucket.",
    _LOAD,
)
LOAD_DECODE_SECONDS: Final = _metric(
    "specwatch_load_decode_seconds",
    _C,
    "Decode seconds (time per output token x tokens after the first) by batch-size bucket "
    "and variant: over decode tokens, the time per output token at that load.",
    (*_LOAD, Label.VARIANT),
)
LOAD_DECODE_TOKENS: Final = _metric(
    "specwatch_load_decode_tokens",
    _C,
    "Output tokens after the first, by batch-size bucket and variant.",
    (*_LOAD, Label.VARIANT),
)
LOAD_GAIN_RATIO: Final = _metric(
    "specwatch_load_gain_ratio",
    _G,
    "Speedup of speculation over none in one batch-size bucket over `load.window_seconds`: "
    "measured against A/B baseline requests at that load, or modelled, with bounds.",
    (*_LOAD, Label.METHOD, Label.BOUND),
)
LOAD_ADVISED_K: Final = _metric(
    "specwatch_load_advised_num_speculative_tokens",
    _G,
    "The K table (vLLM's num_speculative_tokens_per_batch_size) by batch-size bucket, since "
    "the start: 0 where speculation does not pay at that load.",
    _LOAD,
)
HELD_RESPONSE_BYTES: Final = _metric(
    "specwatch_held_response_bytes",
    _G,
    "Bytes specwatch holds of responses to read them: bodies arriving, shadow comparisons, "
    "payloads waiting for the analysis.",
)
HELD_RESPONSE_LIMIT_BYTES: Final = _metric(
    "specwatch_held_response_limit_bytes",
    _G,
    "limits.max_observed_bytes: a response that finds no room under it is relayed, not read.",
)
UPSTREAM_IN_FLIGHT: Final = _metric(
    "specwatch_upstream_in_flight_requests",
    _G,
    "Observed requests in flight through the proxy, per A/B variant: the load requests "
    "start at (vLLM's own num_requests_running is its cross-check).",
    (Label.VARIANT,),
)
VLLM_RUNNING: Final = _metric(
    "specwatch_vllm_requests_running",
    _G,
    "vLLM's num_requests_running from its /metrics, per model (the cross-check of in-flight).",
    _MODEL,
)
TRAFFIC_MIX_PSI: Final = _metric(
    "specwatch_traffic_mix_psi",
    _G,
    "PSI of the recent traffic mix against the drift baseline period (0.1 moderate, 0.25 major).",
    (*_MODEL, Label.DIMENSION),
)
ACCEPTANCE_CHANGE: Final = _metric(
    "specwatch_acceptance_change",
    _G,
    "Change of the overall alpha-hat, recent period against baseline, split into the traffic "
    "mix's part and the slices' own (rate) part.",
    (*_MODEL, Label.PART),
)

# Health of the sidecar itself.
UPSTREAM_UP: Final = _metric(
    "specwatch_upstream_up", _G, "1 when the upstream's /health answered 200 at the last scrape."
)
COVERAGE_RATIO: Final = _metric(
    "specwatch_coverage_ratio",
    _G,
    "Draft tokens seen by the proxy / counted by vLLM over the window (1: nothing bypassed the "
    "proxy; below 1: requests bypassed it, or were aborted mid-stream).",
    _MODEL,
)
PARSE_ERRORS: Final = _metric(
    "specwatch_parse_errors",
    _C,
    "Inputs specwatch could not read, by source and reason.",
    (Label.SOURCE, Label.REASON),
)
PASSTHROUGH_REQUESTS: Final = _metric(
    "specwatch_passthrough_requests",
    _C,
    "Requests to other paths, passed through unobserved.",
    (Label.STATUS_CLASS,),
)
FOLDED_LABEL_VALUES: Final = _metric(
    "specwatch_folded_label_values",
    _C,
    "Requests whose label value was folded into `other` by a cardinality cap.",
    (Label.LABEL,),
)
ASYNCIO_TASKS: Final = _metric(
    "specwatch_asyncio_tasks", _G, "Tasks alive in specwatch's event loop (a leak shows as growth)."
)
CYCLE_LOG_ERRORS: Final = _metric(
    "specwatch_cycle_log_errors", _C, "Cycle-log lines that could not be written."
)
INTERNAL_ERRORS: Final = _metric(
    "specwatch_internal_errors",
    _C,
    "Inputs the analysis failed on, and restarts of a failed loop (a bug: see the log).",
)
PROXY_OVERHEAD_SECONDS: Final = _metric(
    "specwatch_proxy_overhead_seconds",
    _H,
    "Time the proxy spends on a request before forwarding it upstream.",
)
PROXY_ADDED_SECONDS: Final = _metric(
    "specwatch_proxy_added_seconds",
    _H,
    "Time specwatch added to each request answered whole, per observed path: from its request "
    "read to its answer's last byte handed to the client, less the upstream's span (request "
    "sent to answer read to its end).",
    (Label.PATH,),
)
PROXY_OVERHEAD_BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)
BUILD_INFO: Final = _metric("specwatch_build_info", Kind.INFO, "specwatch build.", (Label.VERSION,))
SPEC_CONFIG_INFO: Final = _metric(
    "specwatch_spec_config_info",
    Kind.INFO,
    "The speculative config this sidecar's engine runs (`engine`: vllm or llamacpp; its version "
    "in `vllm_version`): `config` is the id on every series of the analysis.",
    (
        Label.CONFIG,
        Label.TRACK,
        Label.METHOD,
        Label.DRAFT,
        Label.NUM_SPECULATIVE_TOKENS,
        Label.VLLM_VERSION,
        Label.SPECULATION,
        Label.ENGINE,
    ),
)
CAUSE: Final = _metric(
    "specwatch_cause",
    _G,
    "1 for each cause of poor or suspicious acceptance found in the slice (docs/causes.md).",
    (*_SLICE, Label.KIND),
)
CAUSE_DETAIL: Final = _metric(
    "specwatch_cause_detail",
    _G,
    "Each numeric field of a cause found in the slice (field: its name in /status; "
    "docs/causes.md).",
    (*_SLICE, Label.KIND, Label.FIELD),
)
SAMPLING_REQUESTS: Final = _metric(
    "specwatch_sampling_requests",
    _C,
    "Speculative requests by how they asked to decode (sampling: greedy, sampled, default).",
    (*_MODEL, Label.SAMPLING),
)
SAMPLING_ACCEPTED: Final = _metric(
    "specwatch_sampling_accepted_tokens",
    _C,
    "Draft tokens accepted, by how the request asked to decode.",
    (*_MODEL, Label.SAMPLING),
)
SAMPLING_TRIALS: Final = _metric(
    "specwatch_sampling_trials",
    _C,
    "Trials (accepted + a rejection where a step stopped short of its draft), by how the "
    "request asked to decode: accepted over trials is alpha-hat per sampling mode.",
    (*_MODEL, Label.SAMPLING),
)
EXTREME_REQUESTS: Final = _metric(
    "specwatch_extreme_requests",
    _C,
    "Requests that accepted nearly all they tried (kind high: loops) or nearly none (low).",
    (*_MODEL, Label.KIND),
)
CONFIG_CHANGES: Final = _metric(
    "specwatch_config_changes",
    _C,
    "Starts with another speculative config than the state directory's last (/status change).",
)

# vLLM's own view, read from its /metrics and its log (the cross-check).
VLLM_ACCEPTANCE_ALPHA: Final = _metric(
    "specwatch_vllm_acceptance_alpha",
    _G,
    "vLLM's engine-wide alpha-hat over the window, from its own counters (reference; absent "
    "without per-position counters).",
    (*_MODEL, Label.BOUND),
)
VLLM_ACCEPTANCE_RATE: Final = _metric(
    "specwatch_vllm_acceptance_rate",
    _G,
    "vLLM's engine-wide acceptance rate over the window, from its own counters.",
    _MODEL,
)
VLLM_COUNTER_RESETS: Final = _metric(
    "specwatch_vllm_counter_resets", _C, "Times vLLM's counters went backwards (a vLLM restart)."
)
VLLM_LOG_SPEC_LINES: Final = _metric(
    "specwatch_vllm_log_spec_lines", _C, "`SpecDecoding metrics` lines read."
)
VLLM_LOG_ACCEPTED_TOKENS: Final = _metric(
    "specwatch_vllm_log_accepted_tokens", _C, "Accepted tokens according to vLLM's log lines."
)
VLLM_LOG_DRAFT_TOKENS: Final = _metric(
    "specwatch_vllm_log_draft_tokens", _C, "Draft tokens according to vLLM's log lines."
)

# A/B rollout (settings `ab`), the shadow check (`shadow`) and cost (`cost`).
AB_BASELINE_SHARE: Final = _metric(
    "specwatch_ab_baseline_share",
    _G,
    "Configured share of traffic (by key hash) sent to the baseline upstream, 0..1.",
)
AB_ROLLED_BACK: Final = _metric(
    "specwatch_ab_rolled_back",
    _G,
    "1 while rolled back: every request goes to the baseline upstream.",
)
AB_SWITCHES: Final = _metric(
    "specwatch_ab_switches",
    _C,
    "Rollback switches, by direction and by what switched (admin, file, auto).",
    (Label.TO, Label.SOURCE),
)
SHADOW_COMPARISONS: Final = _metric(
    "specwatch_shadow_comparisons",
    _C,
    "Greedy requests whose output was compared with the baseline's (shadow check).",
    _MODEL,
)
OUTPUT_DIVERGENCE: Final = _metric(
    "specwatch_output_divergence",
    _C,
    "Shadow comparisons whose outputs differed: speculation was not lossless.",
    _MODEL,
)
SHADOW_SKIPPED: Final = _metric(
    "specwatch_shadow_skipped",
    _C,
    "Shadow comparisons not made: too many in flight, the baseline failed, or no room under "
    "the byte budget (limits.max_observed_bytes).",
    (Label.REASON,),
)
REPLICA_COST_PER_HOUR: Final = _metric(
    "specwatch_replica_cost_per_hour",
    _G,
    "What the replica behind this sidecar costs per hour (price x accelerators), by variant; "
    "divided by output tokens/s it gives the cost per token.",
    (Label.VARIANT,),
)
