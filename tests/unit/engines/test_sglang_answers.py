"""SGLang 0.5.23's own answers (tests/fixtures/sglang-0.5.23, written by its classes:
tools/sglang_fixtures.py) through specwatch's stream rewriter and readers: the client gets
byte for byte what SGLang would have sent it without specwatch, and specwatch reads what
SGLang says of each request, no more.

Its serializer writes `"usage":null` on every pydantic chunk, its details chunk included: a
rewriter that takes that chunk for vLLM's usage chunk sends the client details it never asked
for and reads nothing (`no_spec_metrics` for every streamed request)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from specwatch.conventions import Outcome, ParseReason, ParseSource
from specwatch.core.health import Health
from specwatch.core.records import RequestRecord, SpecDecodeBlock, SpecTotals
from specwatch.engines import sglang
from specwatch.proxy.observation import Observation, to_record
from specwatch.proxy.stream import StreamRewriter
from specwatch.proxy.tasks import features_of
from specwatch.settings import TaskSettings
from specwatch.upstream.specconfig import sglang_speculative, sglang_target, spec_config

from tests.support import ROOT

ANSWERS = ROOT / "tests" / "fixtures" / "sglang-0.5.23"
CHAT_STEPS = SpecDecodeBlock(3, (3,) * 6, (0, 0, 1, 1, 2, 3), ordered=False)  # [2, 2, 1, 1]


def answer(name: str) -> bytes:
    return (ANSWERS / name).read_bytes()


def events(raw: bytes) -> list[bytes]:
    return [part + b"\n\n" for part in raw.split(b"\n\n") if part]


def relayed(
    upstream: bytes, inject: bool, strip: bool, fast: bool, split: int | None
) -> tuple[bytes, StreamRewriter]:
    """What the client gets of `upstream` through the rewriter, fed one event per chunk (the
    fast path's case) or in pieces of `split` bytes (the general path's)."""
    rewriter = StreamRewriter(inject, 1 << 20, strip=strip)
    rewriter.fast = fast
    if split is None:
        chunks = events(upstream)
    else:
        chunks = [upstream[i : i + split] for i in range(0, len(upstream), split)]
    out = b"".join(rewriter.feed(chunk) for chunk in chunks) + rewriter.finish()
    assert rewriter.parse_failure is None
    return out, rewriter


def record_of(payload: bytes | None, stream: bool, choice_stats: bytes | None = None,
              body: dict[str, Any] | None = None, asked: bool = True,
              path: str = "/v1/chat/completions") -> tuple[RequestRecord, Health]:  # fmt: skip
    health = Health()
    observation = Observation(
        ts=1.0, request_id="r", features=features_of(path, None, body), outcome=None,
        stream=stream, payload=payload, choice_stats=choice_stats, e2e=0.2, first_byte=0.05,
        details_asked=asked,
    )  # fmt: skip
    return to_record(observation, TaskSettings(), health), health


@pytest.mark.parametrize("kind", ["chat", "completion"])
@pytest.mark.parametrize("client_asked_usage", [False, True])
@pytest.mark.parametrize(("fast", "split"), [(True, None), (False, None), (True, 7), (False, 61)])
def test_a_stream_reaches_its_client_as_sglang_wrote_it_and_is_read(
    kind: str, client_asked_usage: bool, fast: bool, split: int | None
) -> None:
    """specwatch asked SGLang for its details (and for usage, where the client did not): the
    client gets SGLang's stream without either, as the plain fixture is SGLang's answer to the
    client's own request; the details and usage are read."""
    upstream = answer(f"{kind}_stream_usage.sse")
    expected = answer(f"{kind}_stream_usage_plain.sse" if client_asked_usage else
                      f"{kind}_stream_plain.sse")  # fmt: skip
    out, rewriter = relayed(upstream, not client_asked_usage, True, fast, split)
    assert out == expected
    record, health = record_of(rewriter.usage, True, rewriter.choice_stats)
    assert (record.outcome, record.spec) == (Outcome.OBSERVED, CHAT_STEPS)
    assert (record.prompt_tokens, record.completion_tokens) == (30, 14)
    assert not health.parse_errors


def test_the_details_chunk_is_not_taken_for_usage() -> None:
    """SGLang's details chunk has `"choices":[]` and `"usage":null`: not vLLM's usage chunk."""
    details = next(e for e in events(answer("chat_stream.sse")) if b'"sglext"' in e)
    assert b'"usage":null' in details
    assert b'"choices":[]' in details
    _, rewriter = relayed(answer("chat_stream.sse"), True, True, True, None)
    assert (rewriter.usage, rewriter.choice_stats) == (None, details)


@pytest.mark.parametrize("kind", ["chat", "completion"])
def test_a_whole_answer_loses_exactly_its_details(kind: str) -> None:
    assert sglang.without_details(answer(f"{kind}.json")) == answer(f"{kind}_plain.json")
    record, _ = record_of(answer(f"{kind}.json"), False)
    assert (record.outcome, record.spec) == (Outcome.OBSERVED, CHAT_STEPS)


def test_several_prompts_are_not_read_as_the_first_ones_details() -> None:
    """SGLang details the first prompt alone, beside both prompts' usage: not read, counted."""
    raw = answer("completion_prompts2.json")
    assert len(json.loads(raw)["choices"]) == 2
    body = {"model": "m", "prompt": ["What is 2 + 2?", "Name a colour."]}
    record, health = record_of(raw, False, body=body, path="/v1/completions")
    assert (record.outcome, record.spec, record.totals) == (Outcome.NO_SPEC_METRICS, None, None)
    assert health.parse_errors == {(ParseSource.RESPONSE, ParseReason.SEVERAL_PROMPTS): 1}
    tokens, _ = record_of(raw, False, body={"prompt": [[1, 2], [3]]}, path="/v1/completions")
    assert tokens.spec is None  # two prompts of token ids
    one, _ = record_of(raw, False, body={"prompt": [1, 2, 3]}, path="/v1/completions")
    assert one.spec == CHAT_STEPS  # a list of token ids is one prompt


def test_one_token_verified_nothing_and_is_read_as_nothing_drafted() -> None:
    """SGLang details only a request it verified a step of: max_tokens 1 never was."""
    record, _ = record_of(answer("chat_one_token.json"), False)
    assert record.outcome == Outcome.OBSERVED
    assert record.totals == SpecTotals(0, 0, 0, engine="sglang")
    unasked, _ = record_of(answer("chat_one_token.json"), False, asked=False)
    assert unasked.outcome == Outcome.NO_SPEC_METRICS


def test_several_choices_are_not_one_requests_details() -> None:
    record, _ = record_of(answer("chat_n2.json"), False)
    assert len(json.loads(answer("chat_n2.json"))["sglext"]["spec_tokens_details"]) == 2
    assert record.outcome == Outcome.NO_SPEC_METRICS


@pytest.mark.parametrize("fast", [True, False])
def test_the_native_generate_stream_goes_out_unchanged_and_its_last_meta_info_is_read(
    fast: bool,
) -> None:
    upstream = answer("generate_stream.sse")
    out, rewriter = relayed(upstream, False, False, fast, None)
    assert out == upstream  # nothing asked of SGLang here: every chunk goes out as it came
    body = {"text": "def add(a, b):", "sampling_params": {"max_new_tokens": 25}, "stream": True}
    record, _ = record_of(rewriter.usage, True, rewriter.choice_stats, body, False, "/generate")
    spec = record.spec
    assert record.outcome == Outcome.OBSERVED
    assert spec is not None
    assert (spec.steps, sum(spec.accepted), record.completion_tokens) == (9, 15, 25)
    whole, _ = record_of(answer("generate.json"), False, body=body, asked=False, path="/generate")
    assert (whole.spec, whole.prompt_tokens) == (spec, 41)


def test_the_fixtures_are_sglangs_own_and_name_their_version() -> None:
    manifest = json.loads((ANSWERS / "MANIFEST.json").read_text())
    assert manifest["sglang"] == "0.5.23"
    assert sorted(manifest["files"]) == sorted(
        p.name for p in Path(ANSWERS).iterdir() if p.name != "MANIFEST.json"
    )


def test_tree_drafts_are_read_as_totals() -> None:
    """chat_tree.json: 5 steps verifying 7-node trees (topk 4, 3 steps deep), 9 accepted.
    Per step it reads as width-7 lines; under a tree config, as totals with their steps."""
    raw = answer("chat_tree.json")
    line, _ = record_of(raw, False)
    assert line.spec is not None
    assert line.spec.num_spec_tokens == 7
    health = Health()
    observation = Observation(
        ts=1.0, request_id="r", features=features_of("/v1/chat/completions", None, None),
        outcome=None, stream=False, payload=raw, e2e=0.2, first_byte=0.05,
    )  # fmt: skip
    tree = to_record(observation, TaskSettings(), health, tree=True)
    assert (tree.outcome, tree.spec) == (Outcome.OBSERVED, None)
    assert tree.totals == SpecTotals(35, 9, 5, engine="sglang")


@pytest.mark.parametrize(
    ("line", "spec", "topk"),
    [
        ("python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE "
         "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8 "
         "--speculative-draft-model-path d",
         {"method": "eagle", "num_speculative_tokens": 7, "eagle_topk": 4, "model": "d"}, 4),
        ("sglang serve --model-path m --speculative-algorithm NEXTN --speculative-num-steps 2 "
         "--speculative-eagle-topk 1", {"method": "nextn", "num_speculative_tokens": 2,
                                       "eagle_topk": 1}, None),
        ("sglang serve --model-path m", None, None),
    ],
)  # fmt: skip
def test_an_sglang_command_says_its_speculative_config(
    line: str, spec: dict[str, Any] | None, topk: int | None
) -> None:
    argv = shlex.split(line)
    assert sglang_speculative(argv) == spec
    assert spec_config(spec, "0.5.23", "stable", engine="sglang").tree_topk == topk
    assert sglang_target([*argv, "--served-model-name", "qwen"]) == "qwen"
