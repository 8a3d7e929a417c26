"""The rewriter's per-event test in C (proxy/_fastpath.c, built with the compiled analysis)
against its Python reference (stream.one_event_kind), and both on a real stream. The C part's
tests are skipped in the pure build, which has none; tests/e2e/test_wheel.py runs this file
against the compiled build and checks that the C part is there."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specwatch.proxy.stream import (
    CONTENT_EVENT,
    FINISHING_EVENT,
    NOT_ONE_EVENT,
    ONE_EVENT,
    USAGE_EVENT,
    one_event_kind,
)

from tests.support import examples

try:
    from specwatch.proxy import _fastpath as fastpath
except ImportError:  # the pure build: the reference alone
    fastpath = None  # type: ignore[assignment]
c_part = pytest.mark.skipif(fastpath is None, reason="the pure build has no C part")

FIXTURES = Path(__file__).parents[2] / "fixtures"
STREAM = FIXTURES / "vllm-0.32.0-cpu" / "stream_usage.sse"
EVENTS = [e + b"\n\n" for e in STREAM.read_bytes().split(b"\n\n") if e]
# SGLang 0.5.23's own streams (tools/sglang_fixtures.py): msgspec chat chunks, pydantic
# completions chunks and details chunk with `"usage":null`, its native /generate's
SGLANG = [
    e + b"\n\n"
    for name in ("chat_stream_usage.sse", "completion_stream_usage.sse", "generate_stream.sse")
    for e in (FIXTURES / "sglang-0.5.23" / name).read_bytes().split(b"\n\n")
    if e
]
PIECES = [
    b"\n", b"\r", b"\n\n", b'"finish_reason":null', b'"finish_reason":', b"data: ", b"x",
    b'"usage"', b'"usage":null', b'"choices":[]', b'data: {"error"', b'"timings"', b'"sglext"',
    b'"meta_info"', b'"speculative_decoding',
]  # fmt: skip

chunks = st.one_of(
    st.sampled_from(EVENTS + SGLANG),
    st.lists(st.sampled_from(PIECES), max_size=8).map(b"".join),
    st.builds(
        lambda event, cut, piece: event[:cut] + piece + event[cut:],
        st.sampled_from(EVENTS + SGLANG),
        st.integers(0, 400),
        st.sampled_from(PIECES),
    ),
    st.binary(max_size=40),
)


@c_part
@settings(max_examples=examples(2000))
@given(chunks)
def test_the_c_test_answers_as_the_python_one(chunk: bytes) -> None:
    assert one_event_kind(chunk) == fastpath.event_kind(chunk)


@pytest.mark.parametrize("kind_of", ["python", "c"])
def test_vllm_events_are_told_apart(kind_of: str) -> None:
    """A real stream's events: content, its finishing chunk, its usage chunk, [DONE]."""
    if kind_of == "c" and fastpath is None:
        pytest.skip("the pure build has no C part")
    kind = one_event_kind if kind_of == "python" else fastpath.event_kind
    expected = {
        CONTENT_EVENT: [e for e in EVENTS if b'"finish_reason":null' in e],
        FINISHING_EVENT: [e for e in EVENTS if b'"finish_reason":"length"' in e],
        USAGE_EVENT: [e for e in EVENTS if b'"choices":[]' in e],
        ONE_EVENT: [b"data: [DONE]\n\n"],
    }
    assert sum(len(events) for events in expected.values()) == len(EVENTS)
    for want, events in expected.items():
        assert events
        assert [want] * len(events) == [kind(e) for e in events]
    assert NOT_ONE_EVENT == kind(EVENTS[0] + EVENTS[1])
    if fastpath is not None:
        with pytest.raises(TypeError):
            fastpath.event_kind("not bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind_of", ["python", "c"])
def test_sglang_events_are_told_apart(kind_of: str) -> None:
    """SGLang's own: its details chunk (`"choices":[]`, `"usage":null`) is not a usage chunk;
    its usage chunk is; a finishing chunk with `"usage":null` (completions) is not usage sent
    unasked; native /generate's last chunk carries its `meta_info`, kept."""
    if kind_of == "c" and fastpath is None:
        pytest.skip("the pure build has no C part")
    kind = one_event_kind if kind_of == "python" else fastpath.event_kind
    for event in SGLANG:
        if b'"sglext"' in event or (b'"meta_info":{"id"' in event and b'"type":' in event):
            assert kind(event) == ONE_EVENT, event
        elif b'"choices":[]' in event:
            assert kind(event) == USAGE_EVENT, event
        elif b'"finish_reason":"length"' in event:
            assert kind(event) == FINISHING_EVENT, event
        elif event != b"data: [DONE]\n\n":
            assert kind(event) == CONTENT_EVENT, event
