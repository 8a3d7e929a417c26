"""with_usage: a streaming request's body asking for the usage chunk, the client's bytes kept."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st
from specwatch.proxy.proxy import _USAGE_OPTION, with_usage

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)
BODIES = st.dictionaries(st.sampled_from(["prompt", "seed", "max_tokens", "n", "x"]), VALUES)


@given(BODIES, st.sampled_from([None, 2]), st.booleans())
def test_without_stream_options_every_byte_the_client_sent_stays(
    extra: dict[str, Any], indent: int | None, spaced: bool
) -> None:
    """The member goes in after the opening brace and nothing else moves: numbers keep their
    spelling (an integer past 2^64, `1e5`), and the body reads as the client's plus the option."""
    body = {"stream": True, **extra}
    raw = (b"  " if spaced else b"") + json.dumps(body, indent=indent).encode()
    asked = with_usage(raw, orjson.loads(raw))
    assert asked is not None
    at = raw.index(b"{") + 1
    assert asked[:at] + asked[at + len(_USAGE_OPTION) :] == raw
    assert json.loads(asked) == {**json.loads(raw), "stream_options": {"include_usage": True}}


@given(BODIES, st.one_of(st.none(), st.just({}), st.just({"include_usage": False, "k": 1})))
def test_with_stream_options_the_option_is_set_in_them(extra: dict[str, Any], options: Any) -> None:
    raw = json.dumps({"stream": True, **extra, "stream_options": options}).encode()
    asked = with_usage(raw, orjson.loads(raw))  # read as the proxy reads it
    assert asked is not None
    kept = options if isinstance(options, dict) else {}
    assert orjson.loads(asked)["stream_options"] == {**kept, "include_usage": True}


def test_a_body_too_deep_to_encode_again_gives_none() -> None:
    deep = b'{"stream": true, "stream_options": {}, "x": ' + b"[" * 300 + b"]" * 300 + b"}"
    assert with_usage(deep, orjson.loads(deep)) is None
    shallow_options = b'{"stream": true, "x": ' + b"[" * 300 + b"]" * 300 + b"}"
    assert with_usage(shallow_options, orjson.loads(shallow_options)) is not None


def test_continuous_usage_the_client_would_not_get_is_not_asked_for() -> None:
    """vLLM honours continuous_usage_stats only with include_usage: a client that sent it
    alone gets no usage direct, so asking vLLM for usage must not switch it on."""
    raw = b'{"stream": true, "stream_options": {"continuous_usage_stats": true, "k": 1}}'
    asked = with_usage(raw, orjson.loads(raw))
    assert asked is not None
    assert {"include_usage": True, "k": 1} == orjson.loads(asked)["stream_options"]
