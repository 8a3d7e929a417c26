from __future__ import annotations

import pytest
from specwatch.analysis.counting.slicing import CtxBuckets, request_key, slice_key, split_steps
from specwatch.core.records import RequestKey, SliceKey, SpecDecodeBlock

BUCKETS = CtxBuckets((512, 2048, 4096, 8192, 32768))


def test_bucket_labels_are_short_and_readable() -> None:
    assert ("0-512", "512-2k", "2k-4k", "4k-8k", "8k-32k", "32k+") == BUCKETS.labels


def test_a_position_on_a_bound_belongs_to_the_bucket_above() -> None:
    assert "0-512" == BUCKETS.label(511)
    assert "512-2k" == BUCKETS.label(512)
    assert "32k+" == BUCKETS.label(100_000)


def test_steps_are_split_by_their_own_context_position() -> None:
    # prompt 500, first token from prefill: step j starts at 501 + 4j (each emits 3 + 1),
    # so steps at 501, 505, 509 are below 512 and those at 513, 517 are not.
    spec = SpecDecodeBlock(num_spec_tokens=3, drafted=(3,) * 5, accepted=(3,) * 5)
    parts = split_steps(spec, 500, BUCKETS, max_position=8)
    assert {"0-512": 3, "512-2k": 2} == {label: c.steps for label, c in parts.items()}
    assert 15 == sum(c.accepted for c in parts.values())


def test_a_request_within_one_bucket_takes_the_fast_path_with_the_same_result() -> None:
    spec = SpecDecodeBlock(num_spec_tokens=3, drafted=(3, 3, 3), accepted=(0, 1, 3))
    parts = split_steps(spec, 10, BUCKETS, max_position=8)
    assert ["0-512"] == list(parts)
    assert {"requests": 1, "spec_steps": 3, "draft_tokens": 9, "accepted_tokens": 4,
            "trials": 6} == parts["0-512"].as_dict()  # fmt: skip


def test_the_first_step_sits_one_past_the_prompt_because_prefill_made_a_token() -> None:
    """A 511-token prompt: prefill emits token 512, so the first step starts at position 512
    and belongs to `512-2k` (the bucket bounds are upper bounds, exclusive)."""
    spec = SpecDecodeBlock(num_spec_tokens=3, drafted=(3,), accepted=(2,))
    assert ["512-2k"] == list(split_steps(spec, 511, BUCKETS, max_position=8))
    assert ["0-512"] == list(split_steps(spec, 510, BUCKETS, max_position=8))


def test_the_keys_made_by_tuples_constructor_are_the_named_tuples() -> None:
    """slice_key and request_key (made without the named tuple's Python __new__) give the keys
    the analysis is read by: equal, equally hashed, of the named type, fields by name."""
    made, named = slice_key("m", "0-512", "code"), SliceKey("m", "0-512", "code")
    assert (made, hash(made), type(made)) == (named, hash(named), SliceKey)
    assert made.ctx_bucket == "0-512"
    request = request_key("m", "0-512", "code", "baseline")
    assert request == RequestKey("m", "0-512", "code", "baseline")
    assert type(request) is RequestKey
    assert request.slice == named


def test_keys_are_interned_up_to_the_bound_and_equal_past_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One object per distinct key (the slice dicts find it by identity); past the bound a key
    is made fresh, equal, and nothing more is kept."""
    from specwatch.analysis.counting import slicing

    first = slice_key("interned-m", "0-512", "code")
    assert first is slice_key("interned-m", "0-512", "code")
    assert request_key("interned-m", "0-512", "code", "spec") is request_key(
        "interned-m", "0-512", "code", "spec"
    )
    monkeypatch.setattr(slicing, "_interned", [slicing.INTERNED])
    fresh = slice_key("interned-past", "0-512", "code")
    assert fresh == SliceKey("interned-past", "0-512", "code")
    assert fresh is not slice_key("interned-past", "0-512", "code")
    assert "interned-past" not in slicing._slices
    assert first is slice_key("interned-m", "0-512", "code")  # kept ones still found
