"""[compiled] The `task` label of a request, always one of the allowlist or `other`.

Order: an allowlisted header value; a configured mapping by served model name, then by path;
request features (tools -> tool_call, a JSON response_format -> structured); a small rule-based
classifier over the prompt; `chat` for chat requests when allowlisted; else `other`. A header
value outside the allowlist never becomes a label: it falls through to the next rule.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from specwatch.conventions import OTHER, Sampling
from specwatch.settings import TaskSettings

# Only the first few kilobytes of a prompt are looked at: enough to classify, bounded in cost.
PROMPT_SAMPLE_CHARS = 4096

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "translation",
        re.compile(
            r"\btranslat(e|ion)\b|\b(into|to) (english|french|german|spanish|italian|chinese"
            r"|japanese|korean|portuguese|russian|dutch)\b",
            re.I,
        ),
    ),
    ("summarization", re.compile(r"\bsummar(y|ize|ise|isation|ization)\b|\btl;?dr\b", re.I)),
    (
        "code",
        re.compile(
            r"```|^\s*(def |class |import |from \S+ import|#include|fn |func |public class)"
            r"|\b(python|javascript|typescript|rust|golang|java|sql|c\+\+) (function|code|script"
            r"|program|class)\b|\b(write|fix|refactor|implement|debug) (a |the |this )?"
            r"(function|code|program|script|bug|method|class)\b",
            re.I | re.M,
        ),
    ),
    ("extraction", re.compile(r"\bextract\b|\blist (all|every)\b.*\bfrom\b", re.I)),
    ("reasoning", re.compile(r"\bstep[- ]by[- ]step\b|\bprove\b|\bsolve\b|\bhow many\b", re.I)),
)

_STRUCTURED_FORMATS = {"json_object", "json_schema"}
_STRUCTURED_KEYS = ("guided_json", "guided_regex", "guided_grammar", "structured_outputs")


class RequestFeatures(msgspec.Struct, frozen=True):
    """What the classifier may look at; the prompt sample is never stored or logged."""

    path: str
    header_value: str | None
    model: str | None
    has_tools: bool
    structured: bool
    prompt_sample: str
    is_chat: bool
    # the prompt's length where the request gives its tokens (`token_ids`, vLLM's token-in,
    # token-out endpoint, whose answer has no usage)
    prompt_tokens: int | None = None
    # the prompts a completions body (`prompt`) or SGLang's native one (`text`) holds
    prompts: int = 1
    sampling: str = Sampling.DEFAULT  # greedy, sampled or default (sampling_of)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict)).strip()
    return ""


def prompt_sample(body: dict[str, Any]) -> str:
    """The start of the prompt text (completions) or of the message texts (chat)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        texts: list[str] = []
        size = 0
        for message in messages:
            if isinstance(message, dict) and message.get("role") in ("user", "system"):
                text = _text_of(message.get("content"))
                texts.append(text[: PROMPT_SAMPLE_CHARS - size])
                size += len(texts[-1])
                if size >= PROMPT_SAMPLE_CHARS:
                    break
        return "\n".join(texts)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
        prompt = prompt[0]
    return prompt[:PROMPT_SAMPLE_CHARS] if isinstance(prompt, str) else ""


def prompts_in(body: dict[str, Any]) -> int:
    """How many prompts a request holds: a list of strings, or of token lists, is one each
    (a list of token ids is one prompt)."""
    prompt = body.get("prompt", body.get("text"))
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
        return len(prompt)
    return 1


def sampling_of(body: dict[str, Any]) -> str:
    """`greedy` where the body asks for temperature 0 or top_k 1 (OpenAI's fields, or SGLang's
    native `sampling_params`), `sampled` where it gives another temperature, `default` where it
    states neither (the server's default decides, which the request does not show)."""
    params = body.get("sampling_params")
    source = params if isinstance(params, dict) else body
    temperature, top_k = _number(source.get("temperature")), _number(source.get("top_k"))
    if temperature == 0 or top_k == 1:
        return Sampling.GREEDY
    if temperature is not None and temperature > 0:
        return Sampling.SAMPLED
    return Sampling.DEFAULT


def _number(value: Any) -> float | None:
    """A JSON number (not a boolean), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def features_of(
    path: str, header_value: str | None, body: dict[str, Any] | None
) -> RequestFeatures:
    body = body or {}
    model = body.get("model")
    tools = body.get("tools") or body.get("functions")
    response_format = body.get("response_format")
    structured = (
        isinstance(response_format, dict) and response_format.get("type") in _STRUCTURED_FORMATS
    ) or any(body.get(key) for key in _STRUCTURED_KEYS)
    return RequestFeatures(
        path=path,
        header_value=header_value,
        model=model if isinstance(model, str) else None,
        has_tools=bool(tools) and isinstance(tools, list),
        structured=structured,
        prompt_sample=prompt_sample(body),
        is_chat=isinstance(body.get("messages"), list),
        prompt_tokens=len(tokens) if isinstance(tokens := body.get("token_ids"), list) else None,
        prompts=prompts_in(body),
        sampling=sampling_of(body),
    )


def classify(features: RequestFeatures, cfg: TaskSettings) -> str:
    """The task label for one request (see the module docstring for the order)."""
    allowed = cfg.allowlist
    if features.header_value:
        value = features.header_value.strip().lower()
        if value in allowed:
            return value
    if features.model is not None and features.model in cfg.by_model:
        return cfg.by_model[features.model]
    if features.path in cfg.by_path:
        return cfg.by_path[features.path]
    if features.has_tools and "tool_call" in allowed:
        return "tool_call"
    if features.structured and "structured" in allowed:
        return "structured"
    if cfg.classify_prompt and features.prompt_sample:
        for task, pattern in _RULES:
            if task in allowed and pattern.search(features.prompt_sample):
                return task
    if features.is_chat and "chat" in allowed:
        return "chat"
    return OTHER
