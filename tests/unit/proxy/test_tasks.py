from __future__ import annotations

from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.proxy.tasks import classify, features_of, sampling_of
from specwatch.settings import TaskSettings

CFG = TaskSettings(by_model={"coder-7b": "code"}, by_path={"/v1/completions": "extraction"})
PLAIN = TaskSettings()


def task(body: dict[str, Any] | None, header: str | None = None, cfg: TaskSettings = PLAIN,
         path: str = "/v1/chat/completions") -> str:  # fmt: skip
    return classify(features_of(path, header, body), cfg)


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


def test_an_allowlisted_header_wins() -> None:
    assert "translation" == task(chat("write a python function"), header="Translation")


def test_an_unknown_header_value_never_becomes_a_label() -> None:
    assert "chat" == task(chat("hello there"), header="my-secret-task-42")
    assert "other" == task({"prompt": "hello"}, header="x" * 200, path="/v1/completions")


def test_configured_mappings_by_model_then_path() -> None:
    assert "code" == task({"model": "coder-7b", "prompt": "hi"}, cfg=CFG, path="/v1/completions")
    assert "extraction" == task({"model": "m", "prompt": "hi"}, cfg=CFG, path="/v1/completions")


def test_request_features_tools_and_json_format() -> None:
    assert "tool_call" == task(chat("weather?", tools=[{"type": "function"}]))
    assert "structured" == task(chat("a user", response_format={"type": "json_object"}))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Please summarize this article for me", "summarization"),
        ("Translate into French: good morning", "translation"),
        ("```python\nprint(1)\n```", "code"),
        ("Fix the bug in this function", "code"),
        ("Solve step by step: 3x + 1 = 7", "reasoning"),
        ("Extract every date from the text", "extraction"),
        ("How was your day?", "chat"),
    ],
)
def test_the_prompt_classifier(text: str, expected: str) -> None:
    assert expected == task(chat(text))


def test_classifier_only_returns_allowlisted_tasks() -> None:
    narrow = TaskSettings(allowlist=("chat",))
    assert "chat" == task(chat("please summarize"), cfg=narrow)
    assert "other" == task({"prompt": "please summarize"}, cfg=narrow, path="/v1/completions")


def test_the_classifier_reads_only_the_start_of_a_huge_prompt() -> None:
    body = {"prompt": "lorem " * 100_000 + " summarize"}
    assert "other" == task(body, path="/v1/completions")


def test_a_mapping_to_an_unlisted_task_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="not in the task allowlist"):
        TaskSettings(by_model={"m": "poetry"})


@pytest.mark.parametrize(
    ("body", "sampling"),
    [
        ({"temperature": 0}, C.Sampling.GREEDY),
        ({"temperature": 0.0, "top_k": 40}, C.Sampling.GREEDY),
        ({"temperature": 0.7, "top_k": 1}, C.Sampling.GREEDY),  # top_k 1 is greedy at any T
        ({"temperature": 0.7, "top_k": 40}, C.Sampling.SAMPLED),
        ({"temperature": 1e-6}, C.Sampling.SAMPLED),
        ({"top_k": 40}, C.Sampling.DEFAULT),  # no temperature: the server's default decides
        ({}, C.Sampling.DEFAULT),
        ({"temperature": False}, C.Sampling.DEFAULT),  # a boolean is no number
        ({"temperature": "0"}, C.Sampling.DEFAULT),
        ({"temperature": -1}, C.Sampling.DEFAULT),
        ({"sampling_params": {"temperature": 0}}, C.Sampling.GREEDY),  # SGLang's /generate
        ({"sampling_params": {"temperature": 0.5}, "temperature": 0}, C.Sampling.SAMPLED),
    ],
)
def test_how_a_request_asks_to_decode(body: dict[str, Any], sampling: str) -> None:
    assert sampling == sampling_of(body)
    assert sampling == features_of("/v1/completions", None, body).sampling
