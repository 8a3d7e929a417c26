"""The simulator's answers in SGLang 0.5.23's layout: the vLLM-shaped bodies and chunks of
sim/shapes.py rewritten member for member as SGLang's classes write theirs.

tests/fixtures/sglang-0.5.23 holds answers written by SGLang's own classes
(tools/sglang_fixtures.py); tests/integration/test_sim_sglang.py holds the simulator's
layout to theirs, event by event. What differs from vLLM's, by SGLang's source:
- a chat chunk is a msgspec struct (sse_utils.StreamChunk, omit_defaults): no `usage` member
  at all; its delta always says `reasoning_content`; the finish comes in a chunk of its own
  after the last text (serving_chat.py 2641-2662);
- every other chunk is a pydantic model written with model_dump_json(): `"usage":null`
  where there is none, the completions chunks and the details chunk included;
- choices say `matched_stop`, never `stop_reason`; there is no `system_fingerprint`;
- usage says `prompt_tokens_details`, `reasoning_tokens`, `completion_tokens_details`;
- a whole answer carries `metadata.weight_version`, then `sglext` where anything was asked.
"""

from __future__ import annotations

from typing import Any

from specwatch.sim.shapes import Generation

_TOP = ("id", "object", "created", "model")


def usage(prompt: int, completion: int) -> dict[str, Any]:
    """protocol.UsageInfo as SGLang's UsageProcessor fills it (no cache report)."""
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
        "completion_tokens_details": None,
    }


def _head(piece: dict[str, Any]) -> dict[str, Any]:
    return {name: piece[name] for name in _TOP}


def _chat_choice(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "index": 0,
        "delta": delta,
        "logprobs": None,
        "finish_reason": finish,
        "matched_stop": None,
    }


def events(piece: dict[str, Any]) -> list[dict[str, Any]]:
    """The SGLang chunks for one vLLM-shaped chunk (two for a chat chunk that finishes: its
    text, then the finish alone)."""
    head, choices = _head(piece), piece["choices"]
    if not choices:  # usage, or the details: pydantic, `"usage":null` where none
        if piece.get("usage") is None and "sglext" not in piece:
            return []  # details asked of a request that verified no step: SGLang sends none
        empty: dict[str, Any] = {**head, "choices": [], "usage": None}
        if (counted := piece.get("usage")) is not None:
            empty["usage"] = usage(counted["prompt_tokens"], counted["completion_tokens"])
        if "sglext" in piece:
            empty["sglext"] = piece["sglext"]
        return [empty]
    choice = choices[0]
    finish = choice.get("finish_reason")
    if piece["object"] == "text_completion":
        plain = {"index": 0, "text": choice["text"], "logprobs": None, "finish_reason": finish}
        plain["matched_stop"] = None
        return [{**head, "choices": [plain], "usage": None}]
    delta = choice["delta"]
    if "role" in delta:
        first = {"reasoning_content": None, "role": delta["role"], "content": delta["content"]}
        return [{**head, "choices": [_chat_choice(first, None)]}]
    text = _chat_choice({"reasoning_content": None, "content": delta["content"]}, None)
    out = [{**head, "choices": [text]}]
    if finish is not None:
        out.append({**head, "choices": [_chat_choice({"reasoning_content": None}, finish)]})
    return out


def body(whole: dict[str, Any], gen: Generation, sglext: dict[str, Any] | None) -> dict[str, Any]:
    """A whole chat or completions answer from the vLLM-shaped one."""
    choice = whole["choices"][0]
    if gen.chat:
        message = {"role": "assistant", "content": choice["message"]["content"]}
        message["reasoning_content"] = None
        first: dict[str, Any] = {"index": 0, "message": message}
    else:
        first = {"index": 0, "text": choice["text"]}
    first.update(logprobs=None, finish_reason=choice["finish_reason"], matched_stop=None)
    out = {
        **_head(whole),
        "choices": [first],
        "usage": usage(gen.prompt_tokens, gen.max_tokens),
        "metadata": {"weight_version": "default"},
    }
    if sglext is not None:
        out["sglext"] = sglext
    return out
