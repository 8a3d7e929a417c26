"""Which engine a `specwatch serve` command starts, or a running server is, and the flags each
needs for specwatch.

A command by its program: llama.cpp's server is its own binary (`llama-server`), TensorRT-LLM's
`trtllm-serve`, SGLang's `python -m sglang.launch_server` or `sglang serve`; anything else is
taken to be vLLM (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`, the simulator),
whose flags were specwatch's only ones before other engines. A running server by the `owned_by`
its `/v1/models` gives every model, which each engine sets to its own name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

VLLM = "vllm"
LLAMACPP = "llamacpp"
SGLANG = "sglang"
TRTLLM = "trtllm"
ENGINES = (VLLM, LLAMACPP, TRTLLM, SGLANG)

# `owned_by` in /v1/models, as each engine's source sets it (vllm/entrypoints/openai protocol,
# sglang/srt/entrypoints/openai/protocol.py, tensorrt_llm/serve/openai_protocol.py, llama.cpp's
# tools/server)
OWNERS = {"vllm": VLLM, "sglang": SGLANG, "tensorrt_llm": TRTLLM, "llamacpp": LLAMACPP}


def engine_of(argv: Sequence[str]) -> str:
    program = PurePath(argv[0]).name if argv else ""
    if program.startswith("llama-server"):
        return LLAMACPP
    if program.startswith("trtllm-serve"):
        return TRTLLM
    if program == "sglang" or "sglang.launch_server" in argv[:3]:
        return SGLANG
    return VLLM


def owner_engine(models: object) -> str | None:
    """The engine a /v1/models answer names in its first model's `owned_by`; None when it
    names none specwatch knows."""
    data = models.get("data") if isinstance(models, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    owner = first.get("owned_by") if isinstance(first, dict) else None
    return OWNERS.get(owner) if isinstance(owner, str) else None


# llama.cpp attaches `timings` to every response unasked; its counters need `--metrics`
LLAMACPP_FLAGS: tuple[tuple[str, str | None], ...] = (("--metrics", None),)
