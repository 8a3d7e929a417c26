"""The response parsers against real vLLM 0.32 captures, and against anything at all."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from specwatch.conventions import Outcome, ParseReason
from specwatch.core.health import Health
from specwatch.engines.vllm.response import (
    ParseFailure,
    event_data,
    is_usage_event,
    parse_response_body,
    parse_response_object,
    parse_spec_block,
)
from specwatch.proxy.budget import ByteBudget, Held
from specwatch.proxy.observation import Observation, to_record
from specwatch.proxy.sse import SseSplitter
from specwatch.proxy.stream import StreamRewriter
from specwatch.proxy.tasks import features_of
from specwatch.settings import TaskSettings

from tests.support import examples


def usage_event(path: Path) -> bytes | None:
    events = SseSplitter(1 << 20).feed(path.read_bytes())
    found = [e for e in events if is_usage_event(e)]
    return found[-1] if found else None


def parsed_captures(captures: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for name in ("nonstream.json", "chat.json"):
        spec = parse_response_body((captures / name).read_bytes()).spec
        assert spec is not None
        out[name] = (spec.steps, sum(spec.drafted), sum(spec.accepted))
    for name in ("stream_usage.sse", "chat_stream_usage.sse"):
        event = usage_event(captures / name)
        assert event is not None
        data = event_data(event)
        assert data is not None
        spec = parse_response_object(orjson.loads(data)).spec
        assert spec is not None
        out[name] = (spec.steps, sum(spec.drafted), sum(spec.accepted))
    return out


def test_non_streaming_capture_gives_its_own_totals(captures: Path) -> None:
    parsed = parse_response_body((captures / "nonstream.json").read_bytes())
    assert ("cmpl-cap-ns-1", "tiny-llama", 14, 40) == (
        parsed.response_id,
        parsed.model,
        parsed.prompt_tokens,
        parsed.completion_tokens,
    )
    assert parsed.spec is not None
    assert (3, 9, 27, 27) == (
        parsed.spec.num_spec_tokens,
        parsed.spec.steps,
        sum(parsed.spec.drafted),
        sum(parsed.spec.accepted),
    )
    assert parsed.latency.ttft == pytest.approx(1.1541183920001004)


def test_captures_with_metrics_add_up_to_vllms_counters(captures: Path) -> None:
    """The four captures that carry the block, plus the stream without usage (the same request
    as nonstream.json, 9 steps of 3), are everything vLLM's /metrics counted."""
    totals = parsed_captures(captures)
    assert {
        "nonstream.json": (9, 27, 27),
        "chat.json": (6, 18, 18),
        "stream_usage.sse": (9, 27, 27),
        "chat_stream_usage.sse": (6, 18, 18),
    } == totals
    assert usage_event(captures / "stream_nousage.sse") is None
    counters: dict[str, float] = {}
    for family in text_string_to_metric_families((captures / "metrics.txt").read_text()):
        for sample in family.samples:
            name = sample.name
            per_position = "_per_pos" in name
            if (
                name.startswith("vllm:spec_decode_num_")
                and name.endswith("_total")
                and not per_position
            ):
                counters[name] = counters.get(name, 0.0) + sample.value
    unseen = totals["nonstream.json"]  # stream_nousage.sse: same prompt, same steps
    steps, drafted, accepted = (sum(t[i] for t in totals.values()) + unseen[i] for i in range(3))
    assert {
        "vllm:spec_decode_num_drafts_total": steps,
        "vllm:spec_decode_num_draft_tokens_total": drafted,
        "vllm:spec_decode_num_accepted_tokens_total": accepted,
    } == counters


def test_error_bodies_carry_no_block_and_are_not_parse_errors(captures: Path) -> None:
    for name in ("n2.json", "error_toolong.json"):
        parsed = parse_response_body((captures / name).read_bytes())
        assert parsed.spec is None


def test_summary_form_is_rebuilt_from_the_histogram() -> None:
    spec = parse_spec_block(
        {
            "acceptance_histogram": [2, 1, 0, 3],
            "num_spec_steps": 6,
            "num_draft_tokens": 18,
            "num_accepted_draft_tokens": 10,
            "num_spec_tokens": 3,
        }
    )
    assert (6, 18, 10, False) == (spec.steps, sum(spec.drafted), sum(spec.accepted), spec.ordered)


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        ("x", "bad_spec_block"),
        ({"per_step_drafted": [3], "per_step_accepted": [4]}, "inconsistent_spec_block"),
        ({"per_step_drafted": [3, 3], "per_step_accepted": [1]}, "inconsistent_spec_block"),
        ({"per_step_drafted": [3], "per_step_accepted": [True]}, "bad_spec_block"),
        (
            {"per_step_drafted": [3], "per_step_accepted": [1], "num_draft_tokens": 4},
            "inconsistent_spec_block",
        ),
        ({"acceptance_histogram": [1, 2], "num_spec_tokens": 3}, "inconsistent_spec_block"),
    ],
)
def test_malformed_blocks_fail_with_a_reason(block: object, reason: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_spec_block(block)
    assert reason == failure.value.reason


@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise_anything_but_a_parse_failure(data: bytes) -> None:
    reason: str | None = None
    try:
        parse_response_body(data)
    except ParseFailure as failure:
        reason = failure.reason
    # a bounded label value, one of the reasons conventions.py spells
    assert reason is None or reason in set(ParseReason)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 50) | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=8,
)
spec_like = st.fixed_dictionaries(
    {},
    optional={
        "per_step_drafted": json_values | st.lists(st.integers(-1, 5), max_size=6),
        "per_step_accepted": json_values | st.lists(st.integers(-1, 5), max_size=6),
        "acceptance_histogram": json_values | st.lists(st.integers(-1, 5), max_size=6),
        "acceptance_histogram_by_draft_length": json_values
        | st.dictionaries(
            st.sampled_from(["0", "1", "3", "x", "-1"]),
            st.lists(st.integers(-1, 5), max_size=5)
            | st.dictionaries(st.sampled_from(["0", "2", "4", ""]), st.integers(-1, 5)),
            max_size=4,
        ),
        "num_spec_tokens": json_values,
        "num_draft_tokens": json_values,
    },
)
response_like = st.fixed_dictionaries(
    {},
    optional={
        "model": json_values,
        "usage": json_values | st.fixed_dictionaries({"prompt_tokens": json_values}),
        "metrics": json_values | st.fixed_dictionaries({"speculative_decoding": spec_like}),
    },
)


@given(response_like)
def test_json_of_the_right_shape_with_wrong_values_never_escapes(obj: object) -> None:
    try:
        parsed = parse_response_object(obj)
    except ParseFailure as failure:
        assert failure.reason  # noqa: PT017  # any reason, as long as there is one
        return
    if parsed.spec is not None:
        steps = zip(parsed.spec.accepted, parsed.spec.drafted, strict=True)
        assert all(0 <= a <= d for a, d in steps)


@given(st.binary(max_size=3000), st.lists(st.integers(1, 200), max_size=20))
def test_the_sse_splitter_returns_every_byte_in_order_however_it_is_chunked(
    data: bytes, cuts: list[int]
) -> None:
    splitter = SseSplitter(max_event_bytes=1 << 20)
    out: list[bytes] = []
    position = 0
    for size in cuts:
        out.extend(splitter.feed(data[position : position + size]))
        position += size
    out.extend(splitter.feed(data[position:]))
    assert data == b"".join(out) + splitter.flush()


# SSE-like bytes: every terminator (and pieces of them) often, so they straddle the cuts
_sse_bytes = st.lists(
    st.sampled_from([b"\n", b"\r", b"\r\n", b"data: x", b"y", b":", b"\n\n"]), max_size=80
).map(b"".join)


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    pieces, position = [], 0
    for size in cuts:
        pieces.append(data[position : position + size])
        position += size
    return [*pieces, data[position:]]


@settings(max_examples=examples(400))
@given(_sse_bytes, st.lists(st.integers(1, 12), max_size=40))
@example(b"data: x\r\r", [7])  # the first `\r` of a held event in the last piece
def test_the_sse_splitter_finds_the_same_events_however_the_bytes_are_cut(
    data: bytes, cuts: list[int]
) -> None:
    """A partial event held over many pieces is searched only where a terminator can end (its
    last 3 bytes and the new piece): the events are those of the bytes in one piece."""
    whole = SseSplitter(1 << 20)
    expected = [*whole.feed(data), whole.flush()]
    splitter = SseSplitter(1 << 20)
    events = [event for piece in _cut(data, cuts) for event in splitter.feed(piece)]
    assert expected == [*events, splitter.flush()]


@given(
    st.lists(st.sampled_from([b"data: ", b"data:", b"x", b"\n", b"\r", b"\n\n", b" "]), max_size=12)
)
@example([b"data: ", b"x", b"\r", b"x", b"\n\n"])  # a `\r` ends a line: two lines, not one
@example([b"data: ", b"x", b"\n", b"\n\n"])  # a second line, empty
def test_an_events_data_read_in_one_slice_is_what_reading_it_line_by_line_gives(
    pieces: list[bytes],
) -> None:
    """event_data's shortcut for the one-line event vLLM writes gives exactly the general
    reading's answer, and the general one is taken wherever the event is anything else."""
    from specwatch.engines.vllm.response import _joined_data

    event = b"".join(pieces)
    assert event_data(event) == _joined_data(event)


def _events_by_the_spec(data: bytes) -> list[bytes]:
    """The events of an SSE stream written from the spec's definition, independently of the
    splitter: an event ends at the first blank line, whichever of the three line endings
    (CRLF CRLF, LF LF, CR CR) makes it; what follows the last one is the rest."""
    out, start, i = [], 0, 0
    while i < len(data):
        for end in (b"\r\n\r\n", b"\n\n", b"\r\r"):
            if data.startswith(end, i):
                out.append(data[start : i + len(end)])
                start = i = i + len(end)
                break
        else:
            i += 1
    return [*out, data[start:]]


@settings(max_examples=examples(400))
@given(_sse_bytes, st.lists(st.integers(1, 12), max_size=40))
@example(b"data: x\r\rdata: y\n\n", [])  # a stream whose server ends lines with CR alone
def test_the_sse_splitter_finds_the_events_the_spec_defines(data: bytes, cuts: list[int]) -> None:
    """Against a reference, not against itself: every terminator the spec allows ends an
    event, however the bytes are cut."""
    splitter = SseSplitter(1 << 20)
    events = [event for piece in _cut(data, cuts) for event in splitter.feed(piece)]
    assert _events_by_the_spec(data) == [*events, splitter.flush()]


@settings(max_examples=examples(300))
@given(_sse_bytes, st.lists(st.integers(1, 12), max_size=40), st.integers(0, 40))
def test_the_sse_splitter_holds_of_the_budget_exactly_the_bytes_it_holds_back(
    data: bytes, cuts: list[int], limit: int
) -> None:
    """After every piece the budget holds the bytes fed and not yet returned, as long as it has
    room; without room the partial event is returned at once (`over_budget`), nothing held.
    Every byte comes out, in order, and nothing is held after the flush."""
    budget = ByteBudget(limit)
    splitter = SseSplitter(1 << 20, Held(budget))
    fed, out = 0, []
    for piece in _cut(data, cuts):
        fed += len(piece)
        out.extend(splitter.feed(piece))
        assert fed - sum(map(len, out)) == budget.held <= limit
    rest = splitter.flush()
    assert (data, 0) == (b"".join(out) + rest, budget.held)
    assert not (splitter.over_budget and limit >= len(data))


def test_an_sse_event_past_the_budget_is_passed_on_and_counted() -> None:
    """A 300-byte event in 10-byte pieces under a budget of 100: held up to the budget, then
    passed on as it comes; the stream is counted unread for the budget (not oversized)."""
    budget = ByteBudget(100)
    rewriter = StreamRewriter(True, 1 << 20, Held(budget))
    event = b"data: " + b"x" * 292 + b"\n\n"
    sent = [rewriter.feed(event[i : i + 10]) for i in range(0, len(event), 10)]
    assert [b""] * 10 == sent[:10]  # held back while it fits: 100 bytes
    assert (event, 0) == (b"".join(sent) + rewriter.finish(), budget.held)
    assert ParseReason.MEMORY_BUDGET == rewriter.parse_failure


def test_a_dropped_stream_holds_nothing_of_the_budget_again() -> None:
    """Once its exchange is over, a stream's partial event is let go, and bytes that still
    arrive are not charged to a budget nobody will give back."""
    budget = ByteBudget(1000)
    rewriter = StreamRewriter(False, 1 << 20, Held(budget))
    rewriter.feed(b"data: {")
    assert 7 == budget.held
    rewriter.drop()
    rewriter.feed(b'"late": 1')
    assert 0 == budget.held


@settings(max_examples=examples(200))
@given(st.binary(max_size=1500), st.booleans(), st.sampled_from([None, "truncated_stream"]))
def test_to_record_never_raises_and_counts_every_failure(
    payload: bytes, stream: bool, proxy_failure: str | None
) -> None:
    health = Health()
    observation = Observation(
        ts=1.0,
        request_id="r",
        features=features_of("/v1/completions", None, None),
        outcome=None,
        stream=stream,
        payload=payload,
        e2e=0.1,
        first_byte=0.01,
        parse_failure=proxy_failure,
    )
    record = to_record(observation, TaskSettings(), health)
    assert record.outcome in set(Outcome)
    failures = sum(health.parse_errors.values())
    if record.outcome == Outcome.PARSE_ERROR:
        assert failures >= 1
    if proxy_failure is not None:
        assert failures >= 1


def test_a_client_gone_after_the_usage_chunk_keeps_its_steps(captures: Path) -> None:
    """The client left after vLLM's final metrics had passed the proxy: the outcome says it
    left, the steps vLLM ran are still counted (reconciliation), a broken payload is ignored."""
    event = usage_event(captures / "stream_usage.sse")
    assert event is not None

    def observed(payload: bytes | None) -> Observation:
        return Observation(
            ts=1.0, request_id="r", features=features_of("/v1/completions", None, None),
            outcome=Outcome.CLIENT_ABORTED, stream=True, payload=payload, e2e=0.1,
            first_byte=0.01,
        )  # fmt: skip

    health = Health()
    record = to_record(observed(event), TaskSettings(), health)
    assert Outcome.CLIENT_ABORTED == record.outcome
    assert record.spec is not None
    assert record.spec.steps > 0
    for payload in (None, b"data: {broken\n\n"):
        record = to_record(observed(payload), TaskSettings(), health)
        assert (Outcome.CLIENT_ABORTED, None) == (record.outcome, record.spec)
    assert {} == dict(health.parse_errors)


_CAPTURED = [
    (Path(__file__).parents[2] / "fixtures" / "vllm-0.32.0-cpu" / name).read_bytes()
    for name in ("stream_usage.sse", "chat_stream_usage.sse", "stream_nousage.sse")
]


_KINDS = [  # one of each kind of event vLLM sends, from the captures, without terminator
    next(e for e in _CAPTURED[0].split(b"\n\n") if b'"finish_reason":null' in e),
    next(e for e in _CAPTURED[0].split(b"\n\n") if b'"finish_reason":"' in e),
    next(e for e in _CAPTURED[0].split(b"\n\n") if b'"usage":{' in e),
    b"data: [DONE]",
    b'data: {"error": {"message": "boom"}}',
]
_mixed_streams = st.lists(
    st.tuples(st.sampled_from(_KINDS), st.sampled_from([b"\n\n", b"\r\n\r\n", b"\r\r"])),
    min_size=1,
    max_size=12,
).map(lambda parts: b"".join(event + separator for event, separator in parts))


@settings(max_examples=examples(400), deadline=None)
@given(
    st.one_of(st.sampled_from(_CAPTURED), _mixed_streams),
    st.lists(st.integers(1, 400), max_size=30),
    st.booleans(),
)
def test_the_rewriters_fast_path_changes_no_byte(
    stream: bytes, cuts: list[int], inject: bool
) -> None:
    """However a stream is chunked (vLLM's real ones, or every kind of event with mixed
    separators; split, merged, one event per chunk), the rewriter with its one-event fast
    path sends what its general path alone sends."""

    from specwatch.proxy import stream as rewriting

    chunks, position = [], 0
    for size in cuts:
        chunks.append(stream[position : position + size])
        position += size
    chunks.append(stream[position:])
    splitter = SseSplitter(1 << 20)
    events = [*splitter.feed(stream), splitter.flush()]
    pairs = [b"".join(events[i : i + 2]) for i in range(0, len(events), 2)]
    # arbitrary cuts, one event per chunk (vLLM's way), two events per chunk
    for pieces in (chunks, events, pairs):

        def run(fast: bool, pieces: list[bytes] = pieces) -> tuple[object, ...]:
            rewriter = rewriting.StreamRewriter(inject, 1 << 20)
            rewriter.fast = fast
            out = b"".join(rewriter.feed(piece) for piece in pieces) + rewriter.finish()
            seen = (rewriter.done, rewriter.errored, rewriter.choice_stats)
            return out, rewriter.usage, rewriter.parse_failure, *seen

        assert run(fast=True) == run(fast=False)


def test_a_stream_without_vllms_timing_is_timed_by_the_stream_and_says_so(captures: Path) -> None:
    """vLLM run without --enable-per-request-metrics gives no time per output token: the
    stream's own timing (first byte to the end over the tokens after the first) stands in, with
    `tpot_source` stream; with vLLM's metrics, vLLM's figure and no source (vLLM's)."""
    event = usage_event(captures / "stream_usage.sse")
    assert event is not None
    body = orjson.loads(event.split(b"data: ", 1)[1])
    for name in ("mean_itl_ms", "generation_time_ms", "time_to_first_token_ms"):
        body["metrics"].pop(name, None)
    untimed = b"data: " + orjson.dumps(body) + b"\n\n"

    def observed(payload: bytes) -> Observation:
        return Observation(
            ts=1.0, request_id="r", features=features_of("/v1/completions", None, None),
            outcome=None, stream=True, payload=payload, e2e=0.41, first_byte=0.01,
        )  # fmt: skip

    record = to_record(observed(untimed), TaskSettings(), Health())
    tokens = record.completion_tokens
    assert tokens is not None
    assert tokens > 1
    assert record.latency.tpot_source == "stream"
    assert record.latency.tpot == pytest.approx(0.40 / (tokens - 1))
    timed = to_record(observed(event), TaskSettings(), Health())
    assert timed.latency.tpot_source is None
    assert timed.latency.tpot == pytest.approx(body_itl(event) / 1000.0)


def body_itl(event: bytes) -> float:
    itl: float = orjson.loads(event.split(b"data: ", 1)[1])["metrics"]["mean_itl_ms"]
    return itl
