"""vLLM's own names: read by the scraper and the proxy, written by the simulator."""

from __future__ import annotations

from typing import Final

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

# llama.cpp's server (`--metrics`) names its speculative counters after vLLM's; no model label
# (one model per server), no request counter (engines/llamacpp.py)
LLAMACPP_NUM_DRAFTS: Final = "llamacpp:spec_decode_num_drafts"
LLAMACPP_NUM_DRAFT_TOKENS: Final = "llamacpp:spec_decode_num_draft_tokens"
LLAMACPP_NUM_ACCEPTED_TOKENS: Final = "llamacpp:spec_decode_num_accepted_tokens"
LLAMACPP_NUM_ACCEPTED_PER_POS: Final = "llamacpp:spec_decode_num_accepted_tokens_per_pos"
LLAMACPP_REQUESTS_RUNNING: Final = "llamacpp:requests_processing"
# SGLang's (metrics_collector.py, 0.5.23; with --enable-metrics): the steps it verified, every
# request's `spec_verify_ct` summed, labelled `model_name` and `engine_type`
SGLANG_VERIFY_CALLS: Final = "sglang:spec_verify_calls"
# TensorRT-LLM's (tensorrt_llm/metrics/collector.py; its counters labelled `model_name` and
# `engine_type`): draft and accepted tokens from its iteration stats (PR #12545, with
# `enable_iter_perf_stats`), and per position from its requests' perf metrics (PR #12636, with
# `return_perf_metrics`): drafted at `token_position` 0 is every step that drafted. trtllm-serve
# mounts the page at /prometheus/metrics; its /metrics is JSON iteration stats, drained when
# read (never polled here)
TRTLLM_NUM_DRAFT_TOKENS: Final = "trtllm_spec_decode_num_draft_tokens"
TRTLLM_NUM_ACCEPTED_TOKENS: Final = "trtllm_spec_decode_num_accepted_tokens"
TRTLLM_DRAFTED_PER_POS: Final = "trtllm_spec_decode_drafted_tokens"
TRTLLM_ACCEPTED_PER_POS: Final = "trtllm_spec_decode_accepted_tokens"
TRTLLM_METRICS_PATH: Final = "/prometheus/metrics"

# Paths whose responses carry per-request speculative metrics: the OpenAI ones, vLLM's token-in,
# token-out endpoint (vLLM PR #43310) and SGLang's native one (its `meta_info`, sent unasked
# when speculating), whose streams are not OpenAI's
GENERATE_PATH: Final = "/inference/v1/generate"
SGLANG_GENERATE_PATH: Final = "/generate"
NATIVE_PATHS: Final = (GENERATE_PATH, SGLANG_GENERATE_PATH)
OBSERVED_PATHS: Final = ("/v1/completions", "/v1/chat/completions", *NATIVE_PATHS)

# The flags that make vLLM attach its per-request speculative data (from 0.32 on)
PER_REQUEST_FLAGS: Final = (
    "--per-request-spec-decode-metrics detailed",
    "--enable-per-request-metrics",
)
FIRST_PER_REQUEST_VERSION: Final = (0, 32)


def per_request_flags(version: str | None) -> tuple[str, ...]:
    """What a vLLM of `version` needs to attach per-request speculative data: its flags, or
    an upgrade first (older builds have no such data)."""
    parts = (version or "").split(".")
    try:
        release = (int(parts[0]), int(parts[1]))
    except (ValueError, IndexError):
        return tuple(f"{flag} (vLLM 0.32 or later)" for flag in PER_REQUEST_FLAGS)
    if release < FIRST_PER_REQUEST_VERSION:
        return (f"an upgrade to vLLM 0.32 or later (this is {version}), then", *PER_REQUEST_FLAGS)
    return PER_REQUEST_FLAGS
