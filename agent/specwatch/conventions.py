"""The only place where metric, label and outcome names are spelled.

Renaming anything here is a BREAKING change for users' dashboards and alerts: note it in
CHANGELOG.md.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "specwatch_"

# --- labels -------------------------------------------------------------------------------
LABEL_MODEL: Final = "model"
LABEL_CTX_BUCKET: Final = "ctx_bucket"
LABEL_TASK: Final = "task"
LABEL_POSITION: Final = "position"
LABEL_OUTCOME: Final = "outcome"
LABEL_ZONE: Final = "zone"
LABEL_BOUND: Final = "bound"
LABEL_SOURCE: Final = "source"
LABEL_REASON: Final = "reason"
LABEL_VARIANT: Final = "variant"  # A/B: which upstream served a request (spec / baseline)
LABEL_STATUS_CLASS: Final = "status_class"
LABEL_METHOD: Final = "method"  # of a gain: measured or modelled

SLICE_LABELS: Final = (LABEL_MODEL, LABEL_CTX_BUCKET, LABEL_TASK)

# Label values with a fixed meaning.
ALL: Final = "all"  # rollup over ctx buckets and tasks, per model
OTHER: Final = "other"  # where values past a cap, or unknown task names, are folded
UNKNOWN_CTX: Final = "unknown"  # a request whose prompt length was never learnt (errors, aborts)

# --- per-slice counters (numerators and denominators; sum across pods before dividing) ----
SPEC_STEPS: Final = PREFIX + "spec_steps"
DRAFT_TOKENS: Final = PREFIX + "draft_tokens"
ACCEPTED_TOKENS: Final = PREFIX + "accepted_tokens"
ACCEPTANCE_TRIALS: Final = PREFIX + "acceptance_trials"
ACCEPTED_BY_POSITION: Final = PREFIX + "accepted_tokens_by_position"
REQUESTS: Final = PREFIX + "requests"
PASSTHROUGH_REQUESTS: Final = PREFIX + "passthrough_requests"
# The request-level variance of alpha-hat (analysis/stats.py), summable across pods: per slice,
# the requests with steps in it, and over them the sums of a_i^2, a_i t_i and t_i^2 (a_i, t_i:
# a request's accepted tokens and trials in the slice).
SLICE_REQUESTS: Final = PREFIX + "slice_requests"
REQUEST_ACCEPTED_SQUARED: Final = PREFIX + "request_accepted_squared"
REQUEST_ACCEPTED_X_TRIALS: Final = PREFIX + "request_accepted_x_trials"
REQUEST_TRIALS_SQUARED: Final = PREFIX + "request_trials_squared"
PROMPT_TOKENS: Final = PREFIX + "prompt_tokens"
COMPLETION_TOKENS: Final = PREFIX + "completion_tokens"

# --- per-request histograms -----------------------------------------------------------------
REQUEST_ACCEPTANCE_LENGTH: Final = PREFIX + "request_acceptance_length"
TTFT_SECONDS: Final = PREFIX + "time_to_first_token_seconds"
TPOT_SECONDS: Final = PREFIX + "time_per_output_token_seconds"
REQUEST_DURATION_SECONDS: Final = PREFIX + "request_duration_seconds"

ACCEPTANCE_LENGTH_BUCKETS: Final = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0)
TTFT_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TPOT_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0)
DURATION_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# --- sidecar judgements (windowed, per pod) -------------------------------------------------
ZONE: Final = PREFIX + "zone"
ACCEPTANCE_ALPHA: Final = PREFIX + "acceptance_alpha"
ACCEPTANCE_RATE: Final = PREFIX + "acceptance_rate"
MEAN_ACCEPTANCE_LENGTH: Final = PREFIX + "mean_acceptance_length"
WINDOW_TRIALS: Final = PREFIX + "window_acceptance_trials"
WINDOW_REQUESTS: Final = PREFIX + "window_requests"
DRIFT_STATISTIC: Final = PREFIX + "drift_statistic"
DRIFT_ALARM: Final = PREFIX + "drift_alarm"
ESTIMATED_GAIN_RATIO: Final = PREFIX + "estimated_gain_ratio"
ADVISED_NUM_SPECULATIVE_TOKENS: Final = PREFIX + "advised_num_speculative_tokens"
TRAFFIC_MIX_PSI: Final = PREFIX + "traffic_mix_psi"
ACCEPTANCE_CHANGE: Final = PREFIX + "acceptance_change"
LABEL_DIMENSION: Final = "dimension"  # of the traffic mix: ctx_bucket or task
LABEL_PART: Final = "part"  # of an acceptance change: mix, rate or total

BOUND_ESTIMATE: Final = "estimate"
BOUND_LOWER: Final = "lower"
BOUND_UPPER: Final = "upper"

# --- health of the sidecar itself -----------------------------------------------------------
UPSTREAM_UP: Final = PREFIX + "upstream_up"
COVERAGE_RATIO: Final = PREFIX + "coverage_ratio"
PARSE_ERRORS: Final = PREFIX + "parse_errors"
PROXY_OVERHEAD_SECONDS: Final = PREFIX + "proxy_overhead_seconds"
ANALYSIS_ERRORS: Final = PREFIX + "analysis_errors"
ASYNCIO_TASKS: Final = PREFIX + "asyncio_tasks"
LABEL_LABEL: Final = "label"
FOLDED_LABEL_VALUES: Final = PREFIX + "folded_label_values"
BUILD_INFO: Final = PREFIX + "build_info"

# --- vLLM's own view, read from its /metrics and its log (the cross-check) -----------------
VLLM_ACCEPTANCE_ALPHA: Final = PREFIX + "vllm_acceptance_alpha"
VLLM_ACCEPTANCE_RATE: Final = PREFIX + "vllm_acceptance_rate"
VLLM_COUNTER_RESETS: Final = PREFIX + "vllm_counter_resets"
VLLM_LOG_SPEC_LINES: Final = PREFIX + "vllm_log_spec_lines"
VLLM_LOG_ACCEPTED_TOKENS: Final = PREFIX + "vllm_log_accepted_tokens"
VLLM_LOG_DRAFT_TOKENS: Final = PREFIX + "vllm_log_draft_tokens"
CYCLE_LOG_ERRORS: Final = PREFIX + "cycle_log_errors"

# --- A/B rollout (settings `ab`) ------------------------------------------------------------
VARIANT_SPEC: Final = "spec"
VARIANT_BASELINE: Final = "baseline"
AB_BASELINE_SHARE: Final = PREFIX + "ab_baseline_share"  # configured share, 0..1
AB_ROLLED_BACK: Final = PREFIX + "ab_rolled_back"  # 1: all traffic goes to the baseline
AB_SWITCHES: Final = PREFIX + "ab_switches"  # counter by `to` and `source`
LABEL_TO: Final = "to"  # of a switch: rolled_back / rolled_forward
AB_SOURCES: Final = ("admin", "file", "auto")

# --- the shadow check (settings `shadow`) -----------------------------------------------------
SHADOW_COMPARISONS: Final = PREFIX + "shadow_comparisons"  # counter by model
OUTPUT_DIVERGENCE: Final = PREFIX + "output_divergence"  # counter by model
SHADOW_SKIPPED: Final = PREFIX + "shadow_skipped"  # counter by reason

REPLICA_COST_PER_HOUR: Final = PREFIX + "replica_cost_per_hour"  # gauge by variant, settings

SOURCE_PROXY: Final = "proxy"  # where a slice's counts came from (/status `source`)
SOURCE_VLLM_METRICS: Final = "vllm_metrics"

PROXY_OVERHEAD_BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)


class Outcome:
    """Every proxied request to an observed endpoint lands in exactly one of these."""

    OBSERVED: Final = "observed"  # a speculative-decoding block was read and recorded
    NO_SPEC_METRICS: Final = "no_spec_metrics"  # success, but vLLM sent no metrics block
    UPSTREAM_ERROR: Final = "upstream_error"  # upstream answered with a non-2xx status
    UPSTREAM_FAILED: Final = "upstream_failed"  # unreachable, or broke off: client got a 502
    # or, mid-stream, an error event
    CLIENT_ABORTED: Final = "client_aborted"  # the client went away before the end
    PARSE_ERROR: Final = "parse_error"  # a 2xx response specwatch could not read
    DROPPED: Final = "dropped"  # the analysis queue was full; the client was served anyway
    REJECTED: Final = "rejected"  # specwatch refused it: too large, too slow, over the cap,
    # or shutting down (an OpenAI-shaped 4xx/5xx; never reached the upstream)

    ALL: Final = (
        OBSERVED,
        NO_SPEC_METRICS,
        UPSTREAM_ERROR,
        UPSTREAM_FAILED,
        CLIENT_ABORTED,
        PARSE_ERROR,
        DROPPED,
        REJECTED,
    )


class Zone:
    """Per-slice verdicts; `insufficient` means too little evidence for any verdict."""

    GREEN: Final = "green"
    YELLOW: Final = "yellow"
    RED: Final = "red"
    INSUFFICIENT: Final = "insufficient"

    ALL: Final = (GREEN, YELLOW, RED, INSUFFICIENT)


class ParseSource:
    """Where a parse error came from (`source` label of specwatch_parse_errors_total)."""

    RESPONSE: Final = "response"
    SSE: Final = "sse"
    REQUEST: Final = "request"
    LOG: Final = "log"
    METRICS: Final = "metrics"


# vLLM's own metric names, read by the scraper and written by the simulator.
VLLM_NUM_DRAFTS: Final = "vllm:spec_decode_num_drafts"
VLLM_NUM_DRAFT_TOKENS: Final = "vllm:spec_decode_num_draft_tokens"
VLLM_NUM_ACCEPTED_TOKENS: Final = "vllm:spec_decode_num_accepted_tokens"
VLLM_NUM_ACCEPTED_PER_POS: Final = "vllm:spec_decode_num_accepted_tokens_per_pos"
VLLM_REQUEST_SUCCESS: Final = "vllm:request_success"
VLLM_PROMPT_TOKENS: Final = "vllm:prompt_tokens"
VLLM_GENERATION_TOKENS: Final = "vllm:generation_tokens"
VLLM_TTFT_SECONDS: Final = "vllm:time_to_first_token_seconds"
VLLM_E2E_SECONDS: Final = "vllm:e2e_request_latency_seconds"
VLLM_REQUESTS_RUNNING: Final = "vllm:num_requests_running"

# Paths of vLLM's OpenAI API whose responses carry per-request speculative metrics.
OBSERVED_PATHS: Final = ("/v1/completions", "/v1/chat/completions")
