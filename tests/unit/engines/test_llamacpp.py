"""llama.cpp's per-request totals, read from its real responses (tests/fixtures/llamacpp-b11434)
and from shapes that contradict themselves."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from specwatch.conventions import ParseReason
from specwatch.core.records import SpecTotals
from specwatch.engines.vllm.response import ParseFailure, event_data, parse_response_object

from tests.support import ROOT

CAPTURED = ROOT / "tests" / "fixtures" / "llamacpp-b11434"


def body(name: str) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads((CAPTURED / name).read_bytes())
    return value


@pytest.mark.parametrize("name", ["completion.json", "chat.json"])
def test_a_response_gives_its_totals_and_no_steps(name: str) -> None:
    obj = body(name)
    parsed = parse_response_object(obj)
    timings = obj["timings"]
    assert parsed.spec is None  # nothing per step: none made up
    assert parsed.totals == SpecTotals(timings["draft_n"], timings["draft_n_accepted"], None)
    assert parsed.completion_tokens == obj["usage"]["completion_tokens"]
    assert parsed.latency.tpot == pytest.approx(
        timings["predicted_ms"] / 1000 / timings["predicted_n"]
    )


def test_a_stream_gives_them_on_its_finishing_chunk() -> None:
    events = (CAPTURED / "completion_stream.sse").read_bytes().split(b"\n\n")
    finishing = [e for e in events if b'"finish_reason":"length"' in e]
    (event,) = finishing
    data = event_data(event)
    assert data is not None
    parsed = parse_response_object(orjson.loads(data))
    assert parsed.totals is not None
    assert parsed.totals.drafted > 0


def test_nothing_drafted_is_zero_totals_not_missing_data() -> None:
    obj = body("completion.json")
    del obj["timings"]["draft_n"], obj["timings"]["draft_n_accepted"]
    assert parse_response_object(obj).totals == SpecTotals(0, 0)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"draft_n": 3, "draft_n_accepted": 4}, ParseReason.INCONSISTENT_SPEC_BLOCK),
        ({"draft_n": 90, "draft_n_accepted": 80, "predicted_n": 40},
         ParseReason.INCONSISTENT_SPEC_BLOCK),
        ({"draft_n": "3"}, ParseReason.BAD_SPEC_BLOCK),
        ({"draft_n_accepted": -1}, ParseReason.BAD_SPEC_BLOCK),
        ({"draft_n": True}, ParseReason.BAD_SPEC_BLOCK),
    ],
)  # fmt: skip
def test_totals_that_contradict_themselves_are_malformed(
    change: dict[str, Any], reason: str
) -> None:
    obj = body("completion.json")
    obj["timings"].update(change)
    with pytest.raises(ParseFailure) as failure:
        parse_response_object(obj)
    assert failure.value.reason == reason


counts = st.integers(min_value=0, max_value=10_000)


@given(drafted=counts, accepted=counts, predicted=counts)
def test_totals_are_read_exactly_when_they_hold_together(
    drafted: int, accepted: int, predicted: int
) -> None:
    obj = body("completion.json")
    obj["timings"].update(draft_n=drafted, draft_n_accepted=accepted, predicted_n=predicted)
    if accepted <= drafted and accepted <= predicted:
        assert parse_response_object(obj).totals == SpecTotals(drafted, accepted)
    else:
        with pytest.raises(ParseFailure):
            parse_response_object(obj)


@pytest.mark.parametrize("kept", ["draft_n", "draft_n_accepted"])
def test_timings_with_one_draft_field_are_a_bad_block_not_nothing_drafted(kept: str) -> None:
    """Absent both, nothing was drafted; absent one, the block is broken (#63: read as nothing
    drafted when either absence was enough)."""
    obj = body("completion.json")
    del obj["timings"]["draft_n" if kept == "draft_n_accepted" else "draft_n_accepted"]
    with pytest.raises(ParseFailure) as failure:
        parse_response_object(obj)
    assert failure.value.reason == ParseReason.BAD_SPEC_BLOCK
