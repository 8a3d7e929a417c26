"""SGLang's details taken back out of an answer (engines/sglang.py): every other byte kept, for
any JSON object however it is spelt."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from specwatch.engines import sglang

DETAILS = {"spec_verify_ct": 9, "spec_num_correct_drafts": 15, "spec_num_proposed_drafts": 27}

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_members = st.dictionaries(st.text().filter(lambda key: key != sglang.EXT), _values, max_size=4)
_spellings = st.sampled_from(
    [{}, {"separators": (",", ":")}, {"indent": 2}, {"separators": (" , ", " : ")}]
)


# the extension's other members: any but the details themselves (which the test puts in)
_others = st.dictionaries(st.text().filter(lambda key: key != sglang.DETAILS), _values, max_size=4)


@given(_members, _others, st.integers(0, 4), _spellings, st.booleans())
def test_the_details_come_out_and_nothing_else_changes(
    top: dict[str, Any],
    others: dict[str, Any],
    at: int,
    spelling: dict[str, Any],
    ascii_only: bool,
) -> None:
    ext = {**others, sglang.DETAILS: DETAILS} if others else {sglang.DETAILS: DETAILS}
    items = list(top.items())
    items.insert(min(at, len(items)), (sglang.EXT, ext))
    answer = json.dumps(dict(items), ensure_ascii=ascii_only, **spelling).encode()
    stripped = sglang.without_details(answer)
    assert stripped is not None
    expected = dict(top)
    if others:
        expected[sglang.EXT] = others  # the client's own extensions stay, in their place
    assert json.loads(stripped) == expected
    assert list(json.loads(stripped)) == [key for key, _ in items if key in expected]
    # one span went (the member and a comma): the rest is the text as it was, byte for byte
    same = next(i for i, (a, b) in enumerate(zip(answer, stripped + b"\0", strict=False)) if a != b)
    assert answer.endswith(stripped[same:])


def test_bytes_outside_the_member_keep_their_spelling() -> None:
    kept = b'{"n": 1e5, "big": 18446744073709551617, "s": "\\u00e9"'
    answer = kept + b', "sglext": {"spec_tokens_details": {}}}'
    assert sglang.without_details(answer) == kept + b"}"


def test_nothing_to_take_out_is_said_so() -> None:
    for answer in (
        b'{"id": "x"}',
        b'{"sglext": {"cached_tokens_details": {"device": 4}}}',
        b'{"sglext": null}',
        b"[1, 2]",
        b'{"sglext": {"spec_tokens_details": ',  # cut short
        b"\xff\xfe",
        b"",
    ):
        assert sglang.without_details(answer) is None, answer


def test_a_request_asks_without_a_byte_of_its_own_changed() -> None:
    raw = b' {"prompt": "hi", "max_tokens": 1e2}'
    asked = sglang.asking(raw)
    assert json.loads(asked) == {**json.loads(raw), sglang.FLAG: True}
    assert asked.replace(b'"return_spec_tokens_details":true,', b"") == raw
    assert sglang.wants({sglang.FLAG: False})  # said no: not overruled


def test_the_details_are_read_per_request_only() -> None:
    assert sglang.details({"sglext": {"spec_tokens_details": DETAILS}}) == DETAILS
    assert sglang.details({"sglext": {"spec_tokens_details": [DETAILS]}}) == DETAILS
    assert sglang.details({"sglext": {"spec_tokens_details": [DETAILS, DETAILS]}}) is None  # n > 1
    assert sglang.details({"sglext": None}) is None
