"""Which engine a `specwatch serve` command starts, or a running server is, and the flags each
needs for specwatch.

A command by its program: llama.cpp's server is its own binary (`llama-server`), TensorRT-LLM's
`trtllm-serve` or `python -m tensorrt_llm.commands.serve`, SGLang's `python -m
sglang.launch_server` or `sglang serve`, wherever they stand after a launcher (`uv run`,
`mpirun -n 2`, `trtllm-llmapi-launch`); anything else is taken to be vLLM (`vllm serve`,
`python -m vllm.entrypoints.openai.api_server`, the simulator), whose flags were specwatch's
only ones before other engines. A running server by the `owned_by`
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


# what a launch line's program or module is called, per engine; the first token that is one
# decides, so what comes before the engine's own program (an interpreter and its options, `uv
# run`, `mpirun -n 2`, `trtllm-llmapi-launch`, `env X=1`) is passed over, and the engine's own
# arguments after it (a model path that happens to read `sglang`) are never reached
_MODULES = {
    "sglang.launch_server": SGLANG,
    "tensorrt_llm.commands.serve": TRTLLM,
    "vllm.entrypoints.openai.api_server": VLLM,
    "vllm.entrypoints.cli.main": VLLM,
}
_PROGRAMS = {"trtllm-serve": TRTLLM, "vllm": VLLM, "sglang": SGLANG}
NAMES = {VLLM: "vLLM", LLAMACPP: "llama.cpp", SGLANG: "SGLang", TRTLLM: "TensorRT-LLM"}
"""Each engine as its project writes its name (in what `serve` prints)."""


def _engine_at(argv: Sequence[str], i: int) -> str | None:
    """The engine `argv[i]` starts, if it is an engine's program or module."""
    token = argv[i]
    if token in _MODULES:
        return _MODULES[token]
    program = PurePath(token).name
    if program.startswith("llama-server"):
        return LLAMACPP
    if program == "sglang":  # `sglang serve`; a bare `sglang` is not a server
        return SGLANG if argv[i + 1 : i + 2] == ["serve"] else None
    return _PROGRAMS.get(program)


def engine_of(argv: Sequence[str]) -> str:
    """The engine a launch line starts: the first of its tokens that names one; vLLM when none
    does (the simulator, a wrapper script), as before other engines."""
    for i in range(len(argv)):
        found = _engine_at(argv, i)
        if found is not None:
            return found
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
# SGLang's counters (`sglang:spec_verify_calls_total`, the steps' cross-check) need
# `--enable-metrics` (sglang/srt/arg_groups/fields/observability.py, 0.5.23)
SGLANG_FLAGS: tuple[tuple[str, str | None], ...] = (("--enable-metrics", None),)
