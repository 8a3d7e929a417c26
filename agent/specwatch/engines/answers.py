"""Which engine's per-request data an answer carries, when it is not vLLM's block:
TensorRT-LLM's per-choice `speculative_decoding` (PR #19311's shape), SGLang's details
(`sglext` on its OpenAI answers, `meta_info` on its native ones), llama.cpp's `timings`.
engines/vllm/response.py reads vLLM's own first and asks here for the rest."""

from __future__ import annotations

from typing import Any

from specwatch.core.records import SpecDecodeBlock, SpecTotals
from specwatch.engines import llamacpp, sglang, shapes
from specwatch.engines.fields import count


def other_engine(obj: dict[str, Any]) -> SpecDecodeBlock | SpecTotals | None:
    """The data of an engine other than vLLM in a decoded answer or chunk; None when none.
    Raises engines' Contradiction or Unreadable."""
    choices = obj.get("choices")
    single = choices[0] if isinstance(choices, list) and len(choices) == 1 else None
    single = single if isinstance(single, dict) else None
    meta = sglang.details(obj) or obj.get("meta_info")
    if not isinstance(meta, dict) and single is not None:
        meta = single.get("meta_info")
    if single is not None and isinstance(single.get("speculative_decoding"), dict):
        return shapes.trtllm_block(single["speculative_decoding"])
    if isinstance(meta, dict) and shapes.SGLANG_STEPS in meta:
        return shapes.sglang_block(meta, None)
    if llamacpp.is_llamacpp(obj):
        return llamacpp.totals(obj)
    return None


def native_tokens(obj: dict[str, Any]) -> tuple[int | None, int | None]:
    """The prompt and completion tokens of SGLang's native /generate answer, which has no
    `usage` but counts both in its `meta_info`; (None, None) elsewhere."""
    meta = obj.get("meta_info")
    if not isinstance(meta, dict):
        return None, None
    return count(meta.get("prompt_tokens")), count(meta.get("completion_tokens"))
