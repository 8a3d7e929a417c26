"""The simulator's answers in vLLM 0.32's shapes (tests/fixtures): bodies, chunks, usage and the
per-request `metrics` block, from one planned generation."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from specwatch.sim.acceptance import Step
from specwatch.sim.requests import Fault

FINGERPRINT = "vllm-0.32.0-specwatch-sim"
WORDS = (
    "the",
    "model",
    "draft",
    "token",
    "accept",
    "verify",
    "step",
    "cache",
    "batch",
    "speed",
    "def",
    "return",
    "value",
    "data",
    "layer",
    "(",
    ")",
    ":",
    "\n",
    "    ",
)


@dataclass(slots=True)
class Generation:
    """One request as planned: its steps, and the output produced so far."""

    request_id: str
    model: str
    chat: bool
    created: int
    prompt_tokens: int
    max_tokens: int
    task: str
    stream: bool
    include_usage: bool
    fault: Fault | None
    steps: list[Step]
    text_rng: random.Random
    corrupt_at: int  # the output token changed by a simulated bug; -1: none
    return_ids: bool
    ids: list[int] = field(default_factory=list)
    last_ids: list[int] = field(default_factory=list)
    # usage in every chunk too: vLLM's continuous_usage_stats, which it honours only with
    # include_usage (should_include_usage in vLLM 0.32)
    continuous_usage: bool = False
    # SGLang's `return_spec_tokens_details`: its details sent only when asked
    spec_details: bool = False

    def text(self, n: int) -> str:
        """The next `n` output tokens (the same for the same request at any K: lossless)."""
        ids: list[int] = []
        for _ in range(n):
            token = self.text_rng.randrange(len(WORDS))
            if len(self.ids) + len(ids) == self.corrupt_at:
                token = (token + 1) % len(WORDS)
            ids.append(token)
        self.ids += ids
        self.last_ids = ids
        return "".join(" " + WORDS[i] for i in ids)

    def listed(self) -> list[Step]:
        """The steps vLLM lists: those that drafted something (and K = 0 steps listed as such)."""
        return [step for step in self.steps if step.drafted or step.listed]


def event(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def metrics_block(
    gen: Generation, spec_metrics: str, k: int, ttft: float, generation: float
) -> dict[str, Any]:
    """`metrics`, with `speculative_decoding` as `--per-request-spec-decode-metrics` says."""
    completion = gen.max_tokens
    block: dict[str, Any] = {
        "time_to_first_token_ms": ttft * 1000.0,
        "generation_time_ms": generation * 1000.0,
        "queue_time_ms": 0.02,
        "mean_itl_ms": generation * 1000.0 / max(1, completion - 1),
        "tokens_per_second": completion / max(1e-9, ttft + generation),
    }
    listed = gen.listed()
    if spec_metrics == "none" or not k:
        return block
    # A request that drafted nothing still gets the block, zeros and no per-step arrays, as
    # vLLM 0.32's RequestSpecDecodeMetrics.to_dict gives it.
    drafted = [s.drafted for s in listed]
    accepted = [s.accepted for s in listed]
    histogram = [0] * (k + 1)
    for a in accepted:
        histogram[a] += 1
    spec: dict[str, Any] = {
        "mean_acceptance_length": 1.0 + sum(accepted) / len(listed) if listed else 1.0,
        "draft_acceptance_rate": sum(accepted) / sum(drafted) if sum(drafted) else 0.0,
        "acceptance_histogram": histogram,
        "num_spec_steps": len(listed),
        "num_accepted_draft_tokens": sum(accepted),
        "num_draft_tokens": sum(drafted),
        "num_spec_tokens": k,
    }
    if spec_metrics == "detailed" and listed:
        spec["per_step_accepted"] = accepted
        spec["per_step_drafted"] = drafted
    block["speculative_decoding"] = spec
    return block


def usage(gen: Generation) -> dict[str, Any]:
    return {
        "prompt_tokens": gen.prompt_tokens,
        "total_tokens": gen.prompt_tokens + gen.max_tokens,
        "completion_tokens": gen.max_tokens,
    }


def body(gen: Generation, text: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """A non-streamed completion or chat completion."""
    token_ids = gen.ids if gen.return_ids else None
    tail: dict[str, Any] = {}
    if gen.chat:
        message = {
            "role": "assistant",
            "content": text,
            "refusal": None,
            "annotations": None,
            "audio": None,
            "function_call": None,
            "reasoning": None,
        }
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
            "token_ids": token_ids,
            "routed_experts": None,
        }
        tail = {"prompt_logprobs": None, "prompt_token_ids": None, "prompt_text": None}
    else:
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
            "token_ids": token_ids,
            "prompt_logprobs": None,
            "prompt_token_ids": None,
            "routed_experts": None,
        }
    return {
        "id": gen.request_id,
        "object": "chat.completion" if gen.chat else "text_completion",
        "created": gen.created,
        "model": gen.model,
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": FINGERPRINT,
        "usage": {**usage(gen), "prompt_tokens_details": None, "completion_tokens_details": None},
        **tail,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": metrics,
    }


def role_chunk(gen: Generation) -> dict[str, Any]:
    """A chat stream's first event: the assistant role, no content yet."""
    choice = {
        "index": 0,
        "delta": {"role": "assistant", "content": ""},
        "logprobs": None,
        "finish_reason": None,
    }
    return {
        "id": gen.request_id,
        "object": "chat.completion.chunk",
        "created": gen.created,
        "model": gen.model,
        "choices": [choice],
        "prompt_token_ids": None,
        "prompt_text": None,
    }


def chunk(gen: Generation, text: str, finished: bool) -> dict[str, Any]:
    """One engine step's event of a stream."""
    token_ids = gen.last_ids if gen.return_ids else None
    if gen.chat:
        choice: dict[str, Any] = {"index": 0, "delta": {"content": text}, "logprobs": None}
        choice["finish_reason"] = "length" if finished else None
        if finished:
            choice["stop_reason"] = None
        choice["token_ids"] = token_ids
        obj = "chat.completion.chunk"
    else:
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": "length" if finished else None,
            "stop_reason": None,
            "prompt_token_ids": None,
            "token_ids": token_ids,
        }
        obj = "text_completion"
    out: dict[str, Any] = {
        "id": gen.request_id,
        "object": obj,
        "created": gen.created,
        "model": gen.model,
        "choices": [choice],
    }
    if gen.continuous_usage:
        done = len(gen.ids)
        prompt = gen.prompt_tokens
        out["usage"] = {
            "prompt_tokens": prompt,
            "total_tokens": prompt + done,
            "completion_tokens": done,
        }
    if finished and not gen.include_usage:
        out["system_fingerprint"] = FINGERPRINT  # vLLM moves it to the usage chunk if asked
    return out


def empty_chunk(gen: Generation) -> dict[str, Any]:
    """A stream's chunk with no choice: what usage, or another engine's extensions, ride on."""
    return {
        "id": gen.request_id,
        "object": "chat.completion.chunk" if gen.chat else "text_completion",
        "created": gen.created,
        "model": gen.model,
        "choices": [],
    }


def usage_chunk(gen: Generation, metrics: dict[str, Any]) -> dict[str, Any]:
    """A stream's final usage event (`choices: []`), with the metrics block."""
    return {
        **empty_chunk(gen),
        "usage": usage(gen),
        "system_fingerprint": FINGERPRINT,
        "metrics": metrics,
    }
