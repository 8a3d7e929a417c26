"""The simulator answering like another engine (`specwatch sim --engine`): the same generation,
its per-request data in that engine's shape (engines/ reads them), its /metrics under that
engine's names. vLLM's shapes are sim/shapes.py; these replace its `metrics` block.

- llamacpp: `timings` (`draft_n`, `draft_n_accepted`, left out when nothing was drafted) on
  the body and on a stream's finishing chunk, with usage there whether asked or not (no usage
  chunk); no /version, its build in /props; `llamacpp:spec_decode_*` counters, no model label.
- trtllm: the one choice's `speculative_decoding` (PR #19311's shape, open: the histogram and
  `num_spec_tokens`, null when steps drafted different lengths, as under
  `draft_len_schedule`); the usage chunk without `metrics`; its counters as released, at
  /prometheus/metrics, by `token_position` (sim/metrics.py), its /metrics JSON.
- sglang: `sglext.spec_tokens_details` only when the request asked
  `return_spec_tokens_details`, on the body, or in a stream's chunk of its own before usage
  (sglang PR #33518), in SGLang 0.5.23's layout (sim/sglang.py: `"usage":null` on its
  pydantic chunks, the details chunk included); `sglang:spec_verify_calls_total` (the steps it
  verified, the sum of every request's `spec_verify_ct`) beside `sglang:spec_accept_length`.

Each names itself in /v1/models' `owned_by` as the engine does.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.sim.shapes import Generation

OWNED_BY = {"vllm": "vllm", "llamacpp": "llamacpp", "trtllm": "tensorrt_llm", "sglang": "sglang"}
BUILD_INFO = "b11434-sim"  # what the simulated llama.cpp's /props names as its build


def _sums(gen: Generation, k: int) -> tuple[list[int], list[int], list[int]]:
    """Per listed step: drafted and accepted; the histogram of accepted counts up to K."""
    listed = gen.listed()
    drafted = [s.drafted for s in listed]
    accepted = [s.accepted for s in listed]
    histogram = [0] * (max([k, *drafted]) + 1)
    for a in accepted:
        histogram[a] += 1
    return drafted, accepted, histogram


def engine_fields(engine: str, gen: Generation, k: int, generation: float) -> dict[str, Any]:
    """What goes on the body (and a stream's finishing chunk) in place of vLLM's `metrics`:
    {"top": fields at the top level, "choice": fields on the one choice}."""
    drafted, accepted, histogram = _sums(gen, k)
    steps = len(drafted)
    if engine == "llamacpp":
        timings: dict[str, Any] = {
            "prompt_n": gen.prompt_tokens,
            "predicted_n": gen.max_tokens,
            "predicted_ms": generation * 1000.0,
        }
        if sum(drafted):
            timings["draft_n"], timings["draft_n_accepted"] = sum(drafted), sum(accepted)
        return {"top": {"timings": timings}, "choice": {}}
    if engine == "trtllm":
        fixed = all(d == k for d in drafted)
        block = {
            "acceptance_rate": sum(accepted) / sum(drafted) if sum(drafted) else 0.0,
            "total_accepted_draft_tokens": sum(accepted),
            "total_draft_tokens": sum(drafted),
            "num_spec_steps": steps,
            "acceptance_histogram": histogram,
            "num_spec_tokens": k if fixed else None,
        }
        return {"top": {}, "choice": {"speculative_decoding": block}}
    if not steps:  # _calculate_spec_decoding_metrics: no verified step, no details
        return {"top": {}, "choice": {}}
    details = {  # sglang: proposed is verify count x the configured width, as SGLang counts it
        "spec_accept_rate": sum(accepted) / (steps * k),
        "spec_accept_length": gen.max_tokens / steps,
        "spec_cap_length": 0.0,
        "spec_block_accept_length": 0.0,
        "spec_num_correct_drafts": sum(accepted),
        "spec_num_proposed_drafts": steps * k,
        "spec_verify_ct": steps,
        # Req.update_spec_correct_drafts_histogram: as long as the most a step accepted, + 1
        "spec_correct_drafts_histogram": histogram[: max(accepted, default=-1) + 1],
        "spec_cap_lens_histogram": [],
    }
    return {"top": {"sglext": {"spec_tokens_details": details}}, "choice": {}}


def dress(obj: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """A vLLM-shaped body or chunk with the engine's fields in place of `metrics`."""
    obj.pop("metrics", None)
    obj.update(fields["top"])
    if fields["choice"] and obj.get("choices"):
        obj["choices"][0].update(fields["choice"])
    return obj


def metrics_page(engine: str, counters: dict[str, float], model: str) -> bytes:
    """/metrics under the engine's names: llama.cpp's and TensorRT-LLM's counters (no model
    label: one model per server), SGLang's count of verified steps and its resetting gauge."""
    if engine == "sglang":  # its TokenizerMetricsCollector's labels (metrics_collector.py)
        steps = counters["drafts"]
        length = 1.0 + counters["accepted"] / steps if steps else 0.0
        labels = f'model_name="{model}",engine_type="unified"'
        return (
            f"# TYPE {C.SGLANG_VERIFY_CALLS}_total counter\n"
            f"{C.SGLANG_VERIFY_CALLS}_total{{{labels}}} {steps}\n"
            f"# TYPE sglang:spec_accept_length gauge\n"
            f"sglang:spec_accept_length{{{labels}}} {length}\n"
        ).encode()
    names = {  # llama.cpp's (TensorRT-LLM's: sim/metrics.py, at its own path)
        C.LLAMACPP_NUM_DRAFTS: "drafts",
        C.LLAMACPP_NUM_DRAFT_TOKENS: "draft_tokens",
        C.LLAMACPP_NUM_ACCEPTED_TOKENS: "accepted",
    }
    lines = []
    for name, key in names.items():
        lines += [f"# TYPE {name}_total counter", f"{name}_total {counters[key]}"]
    return ("\n".join(lines) + "\n").encode()
