"""vLLM's usage event as msgspec Structs, for the typed read (engines/vllm/usage.py): only the shape
vLLM writes, so that a decode that succeeds needs no check but the steps'.

A module of its own, not compiled: msgspec reads a Struct's fields from its annotations, and
mypyc keeps none it could read (`str | None` becomes `type`).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

Count = Annotated[int, msgspec.Meta(ge=0)]


class Steps(msgspec.Struct, gc=False):
    per_step_drafted: tuple[Count, ...]
    per_step_accepted: tuple[Count, ...]
    num_spec_tokens: Count | None = None
    num_spec_steps: Count | None = None
    num_draft_tokens: Count | None = None
    num_accepted_draft_tokens: Count | None = None
    mean_acceptance_length: float | None = None


class Metrics(msgspec.Struct, gc=False):
    speculative_decoding: Steps
    time_to_first_token_ms: float | None = None
    mean_itl_ms: float | None = None
    generation_time_ms: float | None = None


class Usage(msgspec.Struct, gc=False):
    prompt_tokens: Count
    completion_tokens: Count


class UsageEvent(msgspec.Struct, gc=False):
    metrics: Metrics
    usage: Usage
    choices: list[msgspec.Raw]
    id: str | None = None
    model: str | None = None
