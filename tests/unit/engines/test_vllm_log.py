from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specwatch.core.records import EngineLogRecord, SpecLogRecord
from specwatch.engines.vllm.log import LogParseFailure, parse_line

SPEC = (
    "(APIServer pid=17064) INFO 11-29 10:49:24 [metrics.py:120] SpecDecoding metrics: "
    "Mean acceptance length: 2.47, Accepted throughput: 84.90 tokens/s, Drafted throughput: "
    "173.58 tokens/s, Accepted: 898 tokens, Drafted: 1836 tokens, Per-position acceptance rate: "
    "0.745, 0.441, 0.281, Avg Draft acceptance rate: 48.9%"
)
ENGINE = (
    "(APIServer pid=17064) INFO 11-29 10:49:24 [loggers.py:335] Engine 000: Avg prompt "
    "throughput: 473.8 tokens/s, Avg generation throughput: 142.2 tokens/s, Running: 2 reqs, "
    "Waiting: 1 reqs, CPU KV cache usage: 3.5%, Prefix cache hit rate: 0.0%"
)


def test_the_reference_spec_line_is_read_by_key() -> None:
    assert SpecLogRecord(
        accepted=898, drafted=1836, mean_acceptance_length=2.47, per_position=(0.745, 0.441, 0.281)
    ) == parse_line(SPEC)


def test_the_engine_line_is_read_with_cpu_or_gpu_wording() -> None:
    expected = EngineLogRecord(
        engine=0,
        running=2,
        waiting=1,
        kv_cache_usage=0.035,
        prompt_throughput=473.8,
        generation_throughput=142.2,
    )
    assert expected == parse_line(ENGINE)
    assert expected == parse_line(ENGINE.replace("CPU KV", "GPU KV"))


@pytest.mark.parametrize(
    "variant",
    [
        SPEC.split(") ", 1)[1],  # no (APIServer pid=N) prefix
        "\x1b[32m" + SPEC.replace("INFO", "INFO\x1b[0m") + "\r\n",  # colours on a TTY
        # an older field order
        "INFO 01-02 03:04:05 metrics.py:88] SpecDecoding metrics: Drafted: 1836 tokens, "
        "Accepted: 898 tokens, Per-position acceptance rate: 0.745, 0.441, 0.281, "
        "Mean acceptance length: 2.47",
    ],
)
def test_variants_of_the_spec_line_give_the_same_counts(variant: str) -> None:
    record = parse_line(variant)
    assert isinstance(record, SpecLogRecord)
    assert (898, 1836, (0.745, 0.441, 0.281)) == (
        record.accepted,
        record.drafted,
        record.per_position,
    )


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("SpecDecoding metrics: Accepted: 12 tokens", "missing_field"),
        ("SpecDecoding metrics: Accepted: x tokens, Drafted: 5 tokens", "bad_number"),
        ("SpecDecoding metrics: Accepted: 1.5 tokens, Drafted: 5 tokens", "bad_number"),
        ("SpecDecoding metrics: Accepted: 9 tokens, Drafted: 5 tokens", "inconsistent"),
    ],
)
def test_a_malformed_spec_line_fails_with_a_reason(line: str, reason: str) -> None:
    with pytest.raises(LogParseFailure) as failure:
        parse_line(line)
    assert reason == failure.value.reason


def test_other_lines_are_not_ours(captures: Path) -> None:
    records = [parse_line(line) for line in (captures / "vllm_ngram.log").open()]
    found = [r for r in records if r is not None]
    assert [EngineLogRecord, SpecLogRecord] == [type(r) for r in found]
    spec = found[1]
    assert isinstance(spec, SpecLogRecord)
    assert (117, 117) == (spec.accepted, spec.drafted)  # = the capture's /metrics counters
    assert parse_line("INFO Engine 000 started with pid 5") is None


@given(st.text(max_size=300))
def test_arbitrary_text_never_raises_anything_but_a_parse_failure(text: str) -> None:
    for line in (text, "SpecDecoding metrics: " + text, "Engine 001: throughput " + text):
        try:
            parse_line(line)
        except LogParseFailure as failure:
            assert failure.reason in {"missing_field", "bad_number", "inconsistent"}  # noqa: PT017
