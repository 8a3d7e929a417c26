"""The cycle-log reader: the fast decoder (msgspec) and the field-by-field checks agree.

`from_line` decodes a well-formed line in one C pass and hands every other line to `_checked`,
which says what is wrong. The claim is that this changes nothing a reader sees: every line
gives the same record, or the same BadLine reason, either way.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import MAX_TS, BadLine, _checked, from_line, to_line

from tests.support import examples

GOOD: dict[str, Any] = {
    "v": 1, "ts": 1764400000.465, "request_id": "req-1", "model": "m", "task": "code",
    "prompt_tokens": 216, "completion_tokens": 75, "num_spec_tokens": 3,
    "per_step_drafted": [3, 3, 3], "per_step_accepted": [3, 0, 2],
    "ttft_ms": 12.5, "tpot_ms": 8, "e2e_ms": None,
}  # fmt: skip

# values a field may take in a bad or unusual line: the types JSON has, the edges of the
# ranges the two readers check (negative, 2^64 and past it, bool for an int, float for a count)
ODD = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, -1, 2**64 - 1, 2**64, 10**30, 1.0, 2.5]),
    st.floats(allow_nan=False, allow_infinity=False), st.integers(), st.text(max_size=3),
    st.lists(st.integers(-1, 5), max_size=4), st.just({}),
)  # fmt: skip


def outcome(read: Any, line: bytes) -> RequestRecord | str:
    try:
        record: RequestRecord = read(line)
    except BadLine as bad:
        return f"BadLine: {bad}"
    return record


def test_a_written_record_reads_back_by_the_fast_path() -> None:
    record = RequestRecord(
        ts=12.5, request_id="r", model="m", task="chat", outcome="observed",
        prompt_tokens=10, completion_tokens=4, spec=SpecDecodeBlock(2, (2, 2), (1, 2)),
        latency=Latency(ttft=0.25, tpot=0.0125, e2e=None), in_flight=3,
    )  # fmt: skip
    assert record == from_line(to_line(record)) == _checked(to_line(record))


def test_a_tpot_from_the_streams_own_timing_says_so_and_reads_back() -> None:
    """Replay, analyze and compare must know a TPOT that vLLM did not give."""
    record = RequestRecord(
        ts=12.5, request_id="r", model="m", task="chat", outcome="observed",
        prompt_tokens=10, completion_tokens=4, spec=SpecDecodeBlock(2, (2, 2), (1, 2)),
        latency=Latency(tpot=0.0125, tpot_source="stream"), in_flight=3,
    )  # fmt: skip
    line = to_line(record)
    assert json.loads(line)["tpot_source"] == "stream"
    assert record == from_line(line) == _checked(line)
    vllms = msgspec.structs.replace(record, latency=Latency(tpot=0.0125))
    assert "tpot_source" not in json.loads(to_line(vllms))  # vLLM's own: the default
    with pytest.raises(BadLine, match="tpot_source"):
        _checked(json.dumps({**GOOD, "tpot_source": "guess"}).encode())


@settings(max_examples=examples(600), deadline=None)
@given(
    changes=st.dictionaries(
        st.sampled_from([*sorted(GOOD), "variant", "in_flight", "tpot_source"]),
        st.one_of(ODD, st.sampled_from(["vllm", "stream"])),
    ),
    dropped=st.sets(st.sampled_from(sorted(GOOD))),
    baseline=st.booleans(),
)
@example(changes={"prompt_tokens": 2**64}, dropped=set(), baseline=False)
@example(changes={"per_step_accepted": [3, 4, 0]}, dropped=set(), baseline=False)
@example(changes={"v": 1.0}, dropped=set(), baseline=False)
@example(changes={}, dropped={"per_step_drafted"}, baseline=True)
@example(changes={"ts": 1e308}, dropped=set(), baseline=False)
@example(changes={"ts": MAX_TS}, dropped=set(), baseline=False)
@example(changes={"ts": -0.0}, dropped=set(), baseline=False)
@example(changes={"tpot_ms": -1.0, "ttft_ms": -0.0}, dropped=set(), baseline=False)
@example(changes={"e2e_ms": -5}, dropped=set(), baseline=True)
def test_the_fast_decoder_reads_every_line_as_the_checks_do(
    changes: dict[str, Any], dropped: set[str], baseline: bool
) -> None:
    fields = {**GOOD, **({"variant": "baseline"} if baseline else {}), **changes}
    for name in dropped:
        fields.pop(name, None)
    line = json.dumps(fields).encode()
    assert outcome(from_line, line) == outcome(_checked, line)


@pytest.mark.parametrize("extra", [b',"later":1', b',"x":{"y":"\xff"}', b',"x":[1e999]'])
def test_a_field_the_writer_does_not_write_goes_through_the_checks(extra: bytes) -> None:
    """A newer writer's field is read around; one that orjson refuses (bad UTF-8, a number past
    a double) refuses the line, as the checks say: msgspec would skip it unread (the fuzzer's
    equivalence check found that)."""
    line = to_line(from_line(json.dumps(GOOD).encode())).rstrip(b"}\n") + extra + b"}"
    assert outcome(from_line, line) == outcome(_checked, line)
    assert isinstance(outcome(from_line, line), RequestRecord) == (extra == b',"later":1')


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"[]",
        b"not json",
        b'{"v":1,"ts":1e999}',
        b"\xff\xfe",
        b'{"v":1,"ts":1,"request_id":"\\ud800"}',
    ],
)
def test_lines_that_are_not_json_objects_get_the_checked_reason(line: bytes) -> None:
    assert outcome(from_line, line) == outcome(_checked, line)
    assert isinstance(outcome(from_line, line), str)


@pytest.mark.parametrize(
    ("ts", "reason"),
    [
        (1_764_400_000_465.0, "ts 1764400000465.0 is not unix seconds (milliseconds?)"),
        (1e308, "ts 1e+308 is not unix seconds"),
        (-1.0, "ts -1.0 is not unix seconds"),
        (MAX_TS, "ts 253402300800.0 is not unix seconds (milliseconds?)"),
    ],
)
def test_a_timestamp_that_is_not_unix_seconds_is_a_bad_line(ts: float, reason: str) -> None:
    """Both readers refuse it with the same reason; the last second of year 9999 and zero
    are still times."""
    line = json.dumps({**GOOD, "ts": ts}).encode()
    expected = f"BadLine: {reason}".replace("unix seconds", "unix seconds in 1970-9999")
    assert expected == outcome(from_line, line) == outcome(_checked, line)
    for kept in (0.0, MAX_TS - 1.0):
        assert kept == from_line(json.dumps({**GOOD, "ts": kept}).encode()).ts


def test_a_negative_duration_is_a_bad_line_as_the_live_parser_drops_it() -> None:
    for key in ("ttft_ms", "tpot_ms", "e2e_ms"):
        line = json.dumps({**GOOD, key: -8.0}).encode()
        assert f"BadLine: {key} is negative" == outcome(from_line, line) == outcome(_checked, line)
    zero = from_line(json.dumps({**GOOD, "tpot_ms": 0, "ttft_ms": -0.0}).encode())
    assert (0.0, 0.0) == (zero.latency.tpot, zero.latency.ttft)
