"""SGLang's and TensorRT-LLM's per-request data, read from SGLang 0.5.23's own answers
(tests/fixtures/sglang-0.5.23, tools/sglang_fixtures.py) and TensorRT-LLM PR #19311's shape
(tests/fixtures/engines): per step where a fixed width makes the histogram per-step data,
totals with steps where it does not, and nothing read from a record that contradicts itself."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from specwatch.conventions import ParseReason
from specwatch.core.records import SpecDecodeBlock, SpecTotals
from specwatch.engines.fields import histogram, key
from specwatch.engines.vllm.response import ParseFailure, parse_response_object

from tests.support import ROOT

SHAPES = ROOT / "tests" / "fixtures" / "engines"
SGLANG = ROOT / "tests" / "fixtures" / "sglang-0.5.23"


def body(name: str) -> dict[str, Any]:
    where = SGLANG / name.removeprefix("sglang_") if name.startswith("sglang_") else SHAPES / name
    value: dict[str, Any] = orjson.loads(where.read_bytes())
    return value


def rebuilt(histogram: list[int], k: int) -> SpecDecodeBlock:
    accepted = tuple(j for j, n in enumerate(histogram) for _ in range(n))
    return SpecDecodeBlock(k, (k,) * len(accepted), accepted, ordered=False)


def test_sglang_native_and_chat_give_steps_from_the_fixed_width_histogram() -> None:
    native = parse_response_object(body("sglang_generate.json"))
    assert native.spec == rebuilt([1, 2, 5, 1], 3)
    assert native.totals is None
    assert (native.prompt_tokens, native.completion_tokens) == (41, 25)  # its meta_info's
    chat = parse_response_object(body("sglang_chat.json"))
    assert chat.spec == rebuilt([2, 2, 1, 1], 3)
    assert (chat.prompt_tokens, chat.completion_tokens) == (30, 14)


def test_sglangs_accept_length_is_not_read_as_tau() -> None:
    """spec_accept_length = completion tokens / verify count (the prefill token counted)."""
    meta = body("sglang_generate.json")["meta_info"]
    spec = parse_response_object(body("sglang_generate.json")).spec
    assert spec is not None
    tau = 1 + sum(spec.accepted) / spec.steps
    assert meta["spec_accept_length"] == pytest.approx(25 / 9)
    assert tau == pytest.approx(1 + 15 / 9)
    assert spec.reported_tau is None


def test_trtllm_at_one_k_is_per_step_and_under_a_schedule_totals_with_steps() -> None:
    fixed = parse_response_object(body("trtllm_completion.json"))
    assert fixed.spec == rebuilt([2, 2, 2, 2], 3)
    scheduled = parse_response_object(body("trtllm_schedule.json"))
    assert scheduled.spec is None
    assert scheduled.totals == SpecTotals(16, 7, 6, engine="trtllm")


def test_sglang_without_a_histogram_is_totals_with_its_steps() -> None:
    obj = body("sglang_generate.json")
    del obj["meta_info"]["spec_correct_drafts_histogram"]
    assert parse_response_object(obj).totals == SpecTotals(27, 15, 9, engine="sglang")


@pytest.mark.parametrize(
    ("name", "path", "value", "reason"),
    [
        ("sglang_generate.json", ("meta_info", "spec_correct_drafts_histogram"), [1, 2, 5, 2],
         ParseReason.INCONSISTENT_SPEC_BLOCK),  # 10 steps in the histogram, 9 verified
        ("sglang_generate.json", ("meta_info", "spec_num_correct_drafts"), 30,
         ParseReason.INCONSISTENT_SPEC_BLOCK),  # more accepted than proposed
        ("sglang_generate.json", ("meta_info", "spec_num_proposed_drafts"), 28,
         ParseReason.INCONSISTENT_SPEC_BLOCK),  # 28 is not 9 steps x a width, histogram given
        ("sglang_generate.json", ("meta_info", "spec_verify_ct"), "9", ParseReason.BAD_SPEC_BLOCK),
        ("trtllm_completion.json", ("choices", 0, "speculative_decoding", "total_draft_tokens"),
         25, ParseReason.INCONSISTENT_SPEC_BLOCK),  # not 8 steps x K = 3
        ("trtllm_completion.json", ("choices", 0, "speculative_decoding", "acceptance_histogram"),
         [2, 2, 2, 1, 1], ParseReason.INCONSISTENT_SPEC_BLOCK),  # a step past K
        ("trtllm_completion.json", ("choices", 0, "speculative_decoding", "num_spec_steps"),
         True, ParseReason.BAD_SPEC_BLOCK),
        # a digit to str.isdigit that int() refuses: read by the one histogram reader vLLM's
        # blocks use too (engines/fields.py), not a ValueError out of the parser
        ("trtllm_completion.json", ("choices", 0, "speculative_decoding", "acceptance_histogram"),
         {"0": 2, "²": 6}, ParseReason.BAD_SPEC_BLOCK),
        ("trtllm_schedule.json", ("choices", 0, "speculative_decoding",
                                  "total_accepted_draft_tokens"),
         17, ParseReason.INCONSISTENT_SPEC_BLOCK),  # more accepted than drafted
    ],
)  # fmt: skip
def test_a_record_that_contradicts_itself_is_malformed(
    name: str, path: tuple[Any, ...], value: Any, reason: str
) -> None:
    obj = body(name)
    target: Any = obj
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(ParseFailure) as failure:
        parse_response_object(obj)
    assert failure.value.reason == reason


def test_a_histogram_past_nine_accepted_keeps_its_two_digit_keys() -> None:
    """A map's keys spell the index: with K >= 10, "10" is a step that accepted ten (#63: keys
    of two digits refused made every such request a bad block)."""
    assert 10 == key("10")
    assert (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0) == histogram({"0": 1, "10": 2}, "h", k=11)
