"""Which engine a `specwatch serve` command starts, and the flags each needs for specwatch.

By the program: llama.cpp's server is its own binary (`llama-server`); anything else is taken
to be vLLM (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`, the simulator), whose
flags were specwatch's only ones before other engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

VLLM = "vllm"
LLAMACPP = "llamacpp"


def engine_of(argv: Sequence[str]) -> str:
    if argv and PurePath(argv[0]).name.startswith("llama-server"):
        return LLAMACPP
    return VLLM


# llama.cpp attaches `timings` to every response unasked; its counters need `--metrics`
LLAMACPP_FLAGS: tuple[tuple[str, str | None], ...] = (("--metrics", None),)
