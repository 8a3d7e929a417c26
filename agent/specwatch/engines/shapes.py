"""SGLang's and TensorRT-LLM's per-request speculative data: SGLang 0.5.23's as its own classes
write it (tests/fixtures/sglang-0.5.23), TensorRT-LLM's in the shape of its PR #19311, which is
open: released trtllm-serve sends nothing per request (docs/engines.md).

Each gives per-step data only as a histogram of accepted counts, which is per-step data at one
draft width: the steps are rebuilt from it (unordered, as vLLM's summary mode is read). Where
the width is not one (SGLang's adaptive widths; TensorRT-LLM's `draft_len_schedule`, which
sends `num_spec_tokens` null) the histogram cannot say which step drafted how much, and the
request is read as totals with its steps: the rate and tau, no alpha-hat.

Every record is checked against itself (accepted <= drafted, the histogram sums to the steps,
steps x width = drafted under a fixed width); one that contradicts itself is malformed.
"""

from __future__ import annotations

from typing import Any

from specwatch.core.records import SpecDecodeBlock, SpecTotals
from specwatch.engines import Contradiction, Unreadable, fields
from specwatch.engines.detect import SGLANG, TRTLLM

# SGLang's fields (sglang PR #33518): on its OpenAI answers under `sglext.spec_tokens_details`
# when the request asked `return_spec_tokens_details: true` (engines/sglang.py), in the
# `meta_info` of its native /generate answers
SGLANG_STEPS = "spec_verify_ct"
SGLANG_ACCEPTED = "spec_num_correct_drafts"
SGLANG_PROPOSED = "spec_num_proposed_drafts"
SGLANG_HISTOGRAM = "spec_correct_drafts_histogram"
SGLANG_ACCEPT_LENGTH = "spec_accept_length"


def _count(value: Any, field: str) -> int:
    found = fields.count(value)
    if found is None:
        raise Unreadable(f"{field} is not a count")
    return found


def _from_histogram(
    histogram: tuple[int, ...], width: int, steps: int, accepted: int, engine: str
) -> SpecDecodeBlock:
    """The steps of a fixed-width histogram, checked against the totals beside it."""
    if sum(histogram) != steps:
        raise Contradiction(f"{engine}: the histogram holds {sum(histogram)} steps, not {steps}")
    if any(histogram[width + 1 :]):
        raise Contradiction(f"{engine}: a step accepted more than the width {width}")
    rebuilt = tuple(j for j, n in enumerate(histogram) for _ in range(n))
    if sum(rebuilt) != accepted:
        raise Contradiction(f"{engine}: the histogram accepts {sum(rebuilt)}, not {accepted}")
    return SpecDecodeBlock(width, (width,) * steps, rebuilt, ordered=False)


def sglang_block(meta: dict[str, Any], width: int | None) -> SpecDecodeBlock | SpecTotals:
    """SGLang's `meta_info` spec fields. `width`: the configured draft width where known (its
    server's `--speculative-num-draft-tokens`); `spec_num_proposed_drafts` is verify count x
    that width, so it is a total only under a fixed width. `spec_accept_length` is completion
    tokens over verify count (it counts the prefill token): never read as tau."""
    steps = _count(meta.get(SGLANG_STEPS), SGLANG_STEPS)
    accepted = _count(meta.get(SGLANG_ACCEPTED), SGLANG_ACCEPTED)
    proposed = _count(meta.get(SGLANG_PROPOSED), SGLANG_PROPOSED)
    if accepted > proposed:
        raise Contradiction(f"sglang: {accepted} accepted of {proposed} proposed")
    if steps and proposed % steps:  # SGLang counts verify count x its configured width
        raise Contradiction(f"sglang: {proposed} proposed is not {steps} steps x one width")
    fixed = width or (proposed // steps if steps else None)
    if fixed is not None and proposed != steps * fixed:
        raise Contradiction(f"sglang: {proposed} proposed is not {steps} steps x width {fixed}")
    histogram = meta.get(SGLANG_HISTOGRAM)
    if histogram is not None and fixed:
        return _from_histogram(
            fields.histogram(histogram, SGLANG_HISTOGRAM), fixed, steps, accepted, SGLANG
        )
    return SpecTotals(proposed, accepted, steps, engine=SGLANG)


def trtllm_block(block: dict[str, Any]) -> SpecDecodeBlock | SpecTotals:
    """TensorRT-LLM's per-choice `speculative_decoding` (TensorRT-LLM PR #19311):
    `total_draft_tokens`, `total_accepted_draft_tokens`, `num_spec_steps`,
    `acceptance_histogram`, `num_spec_tokens` (null under `draft_len_schedule`). With trees a
    draft is a path: the totals stay what they are, the width is the path's length."""
    drafted = _count(block.get("total_draft_tokens"), "total_draft_tokens")
    accepted = _count(block.get("total_accepted_draft_tokens"), "total_accepted_draft_tokens")
    steps = _count(block.get("num_spec_steps"), "num_spec_steps")
    if accepted > drafted:
        raise Contradiction(f"trtllm: {accepted} accepted of {drafted} drafted")
    width = block.get("num_spec_tokens")
    histogram = block.get("acceptance_histogram")
    if width is None or histogram is None:  # a schedule (or no histogram): totals
        return SpecTotals(drafted, accepted, steps, engine=TRTLLM)
    width = _count(width, "num_spec_tokens")
    if drafted != steps * width:
        raise Contradiction(f"trtllm: {drafted} drafted is not {steps} steps x {width}")
    return _from_histogram(
        fields.histogram(histogram, "acceptance_histogram"), width, steps, accepted, TRTLLM
    )
