"""The speculative config a sidecar reports: read off vLLM's command line or the same JSON, its
id stable across pods and sensitive to what defines it."""

from __future__ import annotations

import json

import pytest
import structlog
from specwatch.upstream.specconfig import (
    UNKNOWN,
    config_id,
    flag_value,
    read_speculative,
    read_version,
    spec_config,
    target_of,
)

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}


def test_vllms_command_line_gives_the_config_and_the_target_in_every_spelling() -> None:
    spec = json.dumps(NGRAM)
    for argv in (
        ["vllm", "serve", "Qwen/Qwen2.5-7B", "--speculative-config", spec],
        ["vllm", "serve", "Qwen/Qwen2.5-7B", f"--speculative-config={spec}"],
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2.5-7B",
         "--speculative_config", spec],
    ):  # fmt: skip
        value = flag_value(argv, ("--speculative-config", "--speculative_config"))
        assert NGRAM == read_speculative(value)
        assert "Qwen/Qwen2.5-7B" == target_of(argv)
    assert target_of(["python", "-m", "vllm.entrypoints.openai.api_server"]) is None


def test_the_id_is_the_same_for_the_same_inputs_and_moves_with_each_of_them() -> None:
    reordered = json.loads(json.dumps(dict(reversed(NGRAM.items()))))
    base = config_id(NGRAM, "0.32.0")
    assert base == config_id(reordered, "0.32.0")  # keys in another order: the same config
    assert 10 == len(base)
    assert base != config_id({**NGRAM, "num_speculative_tokens": 4}, "0.32.0")  # K
    assert base != config_id({**NGRAM, "prompt_lookup_max": 5}, "0.32.0")  # any setting
    assert base != config_id(NGRAM, "0.33.0")  # a vLLM upgrade is a change of config
    track_a, track_b = (
        spec_config(NGRAM, "0.32.0", "stable"),
        spec_config(NGRAM, "0.32.0", "canary"),
    )
    assert track_a.id == track_b.id  # the track is where a config runs, not what it is


@pytest.mark.parametrize(
    ("spec", "method", "draft"),
    [
        (NGRAM, "ngram", None),
        ({"model": "ngram", "num_speculative_tokens": 2}, "ngram", None),
        ({"model": "meta-llama/Llama-3.2-1B", "num_speculative_tokens": 5}, "draft_model",
         "meta-llama/Llama-3.2-1B"),
        ({"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}, "eagle3",
         "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
        ({"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B"}, "eagle",
         "yuhuili/EAGLE-LLaMA3-Instruct-8B"),
        ({"method": "mtp", "num_speculative_tokens": 1}, "mtp", None),
    ],
)  # fmt: skip
def test_the_method_is_the_given_one_or_inferred_from_the_draft_as_vllm_does(
    spec: dict[str, object], method: str, draft: str | None
) -> None:
    config = spec_config(spec, "0.32.0", "stable")
    assert (method, draft) == (config.method, config.draft)


def test_the_schedule_and_the_rejection_sampler_are_read() -> None:
    spec = {
        "method": "ngram",
        "num_speculative_tokens": 4,
        "num_speculative_tokens_per_batch_size": [[1, 4, 4], [5, 64, 2], "bad"],
        "rejection_sample_method": "synthetic",
    }
    config = spec_config(spec, "0.32.0", "stable")
    assert ((1, 4, 4), (5, 64, 2)) == config.schedule
    assert "synthetic" == config.rejection_sample_method
    assert "standard" == spec_config(NGRAM, None, "stable").rejection_sample_method


def test_a_config_that_cannot_be_read_is_one_line_and_unknown_never_a_crash() -> None:
    with structlog.testing.capture_logs() as logs:
        assert read_speculative("{not json") is None
        assert read_speculative("[1, 2]") is None
    assert 2 == sum(e["event"] == "speculative_config_unreadable" for e in logs)
    assert UNKNOWN == spec_config(None, None, "stable").id
    assert spec_config(None, "0.32.0", "stable").id != UNKNOWN  # the version alone is known


def test_vllms_version_answer_is_read_and_anything_else_is_none() -> None:
    assert "0.32.0" == read_version(b'{"version": "0.32.0"}')
    assert read_version(b"<html>") is None
    assert read_version(b'{"version": 32}') is None
    assert read_version(b"[]") is None


def test_serve_followed_by_a_flag_names_no_model_and_a_longer_flag_is_not_the_model() -> None:
    """`vllm serve --config c.yaml` has no positional model; `--model-impl=transformers`
    after the model is another flag, not `--model=`."""
    assert target_of(["vllm", "serve", "--config", "c.yaml"]) is None
    assert "M" == target_of(["vllm", "serve", "M", "--model-impl=transformers"])
    assert "M" == target_of(["python", "-m", "x", "--model", "M", "--model-impl", "vllm"])


def test_a_flag_without_its_value_is_one_line_not_a_crash() -> None:
    argv = ["vllm", "serve", "M", "--speculative-config"]
    with structlog.testing.capture_logs() as logs:
        assert flag_value(argv, ("--speculative-config",)) is None
    assert [("flag_without_value", "--speculative-config")] == [
        (e["event"], e["flag"]) for e in logs
    ]
    assert spec_config(read_speculative(flag_value(argv, ("--speculative-config",))), None, "s")
