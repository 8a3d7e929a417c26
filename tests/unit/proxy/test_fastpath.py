"""The rewriter's per-event test in C (proxy/_fastpath.c, built with the compiled analysis)
against its Python reference (stream.one_event_kind). Skipped in the pure build, which has
no C part; tests/e2e/test_wheel.py runs this file against the compiled build and checks that
the C part is there."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specwatch.proxy.stream import CONTENT_EVENT, ONE_EVENT, one_event_kind

fastpath = pytest.importorskip("specwatch.proxy._fastpath")

STREAM = Path(__file__).parents[2] / "fixtures" / "vllm-0.32.0-cpu" / "stream_usage.sse"
EVENTS = [e + b"\n\n" for e in STREAM.read_bytes().split(b"\n\n") if e]
PIECES = [
    b"\n", b"\r", b"\n\n", b'"finish_reason":null', b'"finish_reason":', b"data: ", b"x",
    b'"usage"', b'"choices":[]', b'data: {"error"', b'"timings"', b'"sglext"', b'"meta_info"',
    b'"speculative_decoding',
]  # fmt: skip

chunks = st.one_of(
    st.sampled_from(EVENTS),
    st.lists(st.sampled_from(PIECES), max_size=8).map(b"".join),
    st.builds(
        lambda event, cut, piece: event[:cut] + piece + event[cut:],
        st.sampled_from(EVENTS),
        st.integers(0, 400),
        st.sampled_from(PIECES),
    ),
    st.binary(max_size=40),
)


@settings(max_examples=2000)
@given(chunks)
def test_the_c_test_answers_as_the_python_one(chunk: bytes) -> None:
    assert one_event_kind(chunk) == fastpath.event_kind(chunk)


def test_vllm_content_events_take_the_fast_path() -> None:
    content = [e for e in EVENTS if b'"finish_reason":null' in e]
    assert content
    assert all(fastpath.event_kind(e) == CONTENT_EVENT for e in content)
    assert all(fastpath.event_kind(e) == ONE_EVENT for e in EVENTS if e not in content)
    with pytest.raises(TypeError):
        fastpath.event_kind("not bytes")
