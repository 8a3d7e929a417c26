"""The typed read of vLLM's usage event (engines/vllm/usage.py) against the general reader: the same
answer, or the same failure, on any event; and the typed read taken for what vLLM sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specwatch.conventions import ParseReason
from specwatch.engines.vllm.response import (
    ParsedResponse,
    ParseFailure,
    event_data,
    parse_response_object,
)
from specwatch.engines.vllm.usage import parse_usage_data, restore_fingerprint, typed_read

from tests.support import examples

FIXTURES = Path(__file__).parents[2] / "fixtures"
CAPTURES = [
    FIXTURES / "vllm-0.32.0-cpu" / "stream_usage.sse",
    FIXTURES / "vllm-0.32.0-cpu" / "chat_stream_usage.sse",
]

# what a count field may hold: counts mostly, and what is not one
odd = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=3), st.just(-1)
)
count = st.one_of(st.integers(0, 6), st.integers(0, 6), odd)
number = st.one_of(st.floats(-5, 5e3, allow_nan=False), st.integers(-2, 5000), odd)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """Usage events near vLLM's shape: each part as vLLM writes it four times in five."""

    def often(right: Any, other: st.SearchStrategy[Any]) -> Any:
        return right if draw(st.integers(0, 4)) else draw(other)

    steps = draw(st.integers(0, 6))
    k = draw(st.integers(0, 4))
    drafted = [often(k, st.integers(0, 5)) for _ in range(steps)]
    accepted = [often(draw(st.integers(0, d)), st.integers(0, 5)) for d in drafted]
    block: dict[str, Any] = {
        "per_step_drafted": often(drafted, st.lists(count, max_size=3)),
        "per_step_accepted": often(accepted, st.lists(count, max_size=3)),
        "num_spec_tokens": often(k, count),
        "num_spec_steps": often(steps, count),
        "num_draft_tokens": often(sum(drafted), count),
        "num_accepted_draft_tokens": often(sum(accepted), count),
        "mean_acceptance_length": often(1 + sum(accepted) / max(steps, 1), number),
    }
    metrics: dict[str, Any] = {
        "speculative_decoding": block,
        "time_to_first_token_ms": often(6.3, number),
        "mean_itl_ms": often(2.05, number),
        "generation_time_ms": often(80, number),
    }
    event: dict[str, Any] = {
        "id": often("cmpl-1", st.one_of(st.none(), st.integers(-9, 9))),
        "object": "text_completion",
        "model": often("tiny", st.sampled_from(["", None, 3])),
        "choices": often(
            [],
            st.sampled_from(
                [[{"index": 0, "text": "x"}], [{"speculative_decoding_stats": 1}], None, {}]
            ),
        ),
        "usage": often(
            {"prompt_tokens": 14, "completion_tokens": 40},
            st.one_of(
                st.none(),
                st.fixed_dictionaries({"prompt_tokens": count, "completion_tokens": count}),
            ),
        ),
        "metrics": often(metrics, st.sampled_from([None, [], {"speculative_decoding": None}])),
    }
    for part in (event, metrics, block):  # a field left out now and then
        for name in list(part):
            if not draw(st.integers(0, 14)):
                del part[name]
    return event


def usage_data(capture: Path) -> bytes:
    """The `data:` of a captured stream's usage event."""
    raw = capture.read_bytes()
    event = next(e for e in raw.split(b"\n\n") if b'"usage"' in e and b'"choices":[]' in e)
    data = event_data(event + b"\n\n")
    assert data is not None
    return data


def general(data: bytes) -> ParsedResponse | str:
    try:
        return parse_response_object(orjson.loads(data))
    except ParseFailure as failure:
        return failure.reason


def typed(data: bytes) -> ParsedResponse | str:
    try:
        return parse_usage_data(data)
    except ParseFailure as failure:
        return failure.reason


@settings(max_examples=examples(600))
@given(events())
def test_typed_read_answers_as_the_general_reader(event: dict[str, Any]) -> None:
    data = orjson.dumps(event)
    assert typed(data) == general(data)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_vllm_usage_events_take_the_typed_read(capture: Path) -> None:
    data = usage_data(capture)
    expected = general(data)
    assert isinstance(expected, ParsedResponse)
    assert expected.spec is not None
    assert expected == typed_read(data)


def test_a_choice_with_its_own_block_is_read_as_the_general_reader_reads_it() -> None:
    """The per-choice shape's block is read before `metrics`' (and may fail): only the general
    reader reads choices."""
    data = usage_data(CAPTURES[0])
    obj = orjson.loads(data)
    obj["choices"] = [{"index": 0, "speculative_decoding_stats": {"per_step_drafted": [1]}}]
    changed = orjson.dumps(obj)
    assert general(changed) == ParseReason.BAD_SPEC_BLOCK
    assert typed(changed) == general(changed)


def reread(held: bytes, usage: bytes) -> bytes:
    """The fingerprint restored by reading both events as JSON and writing the chunk again."""
    chunk = orjson.loads(held[6:].rstrip(b"\r\n"))
    chunk["system_fingerprint"] = orjson.loads(usage[6:].rstrip(b"\r\n"))["system_fingerprint"]
    return b"data: " + orjson.dumps(chunk) + held[len(held.rstrip(b"\r\n")) :]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=examples(400))
@given(
    st.dictionaries(
        st.text(max_size=6).filter(lambda k: k != "system_fingerprint"), json_values, max_size=5
    ),
    st.text(max_size=12),
    st.sampled_from([b"\n\n", b"\r\n\r\n"]),
)
def test_the_fingerprint_is_spliced_in_as_the_json_reading_writes_it(
    chunk: dict[str, Any], fingerprint: str, terminator: bytes
) -> None:
    """vLLM writes compact JSON: the chunk with the fingerprint spliced in is, byte for byte,
    the chunk read and written again with it (escaped fingerprints and empty chunks included,
    which take the JSON reading)."""
    held = b"data: " + orjson.dumps(chunk) + terminator
    usage_chunk = {"id": "c", "choices": [], "usage": {}, "system_fingerprint": fingerprint}
    usage_event = b"data: " + orjson.dumps(usage_chunk) + b"\n\n"
    assert reread(held, usage_event) == restore_fingerprint(held, usage_event)


def test_a_chunk_not_written_compact_keeps_its_bytes_and_gains_the_fingerprint() -> None:
    held = b'data: {"id": "c", "choices": [{"text": "\\u00e9", "finish_reason": "length"}]}\n\n'
    usage_event = b'data: {"choices":[],"usage":{},"system_fingerprint":"fp-1"}\n\n'
    restored = restore_fingerprint(held, usage_event)
    assert held[:-3] + b',"system_fingerprint":"fp-1"}\n\n' == restored
    for usage_without in (b'data: {"choices":[],"usage":{}}\n\n', b"data: {broken\n\n"):
        assert held == restore_fingerprint(held, usage_without)
    assert b"data: [1]\n\n" == restore_fingerprint(b"data: [1]\n\n", usage_event)


def test_a_step_that_drafted_more_than_k_is_an_inconsistent_block() -> None:
    data = usage_data(CAPTURES[0])
    obj = orjson.loads(data)
    block = obj["metrics"]["speculative_decoding"]
    block["num_spec_tokens"] = max(block["per_step_drafted"]) - 1
    changed = orjson.dumps(obj)
    assert typed(changed) == general(changed) == ParseReason.INCONSISTENT_SPEC_BLOCK
