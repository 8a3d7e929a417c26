"""What the simulator accepts: vLLM's request validation, its prompt counting, and the faults a
test may inject with the `X-Sim-Fail` header."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import orjson
from aiohttp import web

from specwatch import conventions as C

TASK_MARKER = "[task:"


class Fault(StrEnum):
    """`X-Sim-Fail` values."""

    INTERNAL = "500"  # an internal error before any step
    CUT = "cut"  # the connection is cut after half the steps: an engine killed mid-stream
    TRUNCATE = "truncate"  # the answer stops halfway, cleanly closed (no usage, no [DONE])
    BAD_JSON = "bad-json"  # one malformed event mid-stream; a JSON body that is not JSON
    HTML = "html"  # a 200 with an HTML page, no generation
    SLOW = "slow"  # 50 ms between stream chunks


def fault_of(headers: Any) -> Fault | None:
    value = headers.get(C.Header.SIM_FAIL)
    try:
        return None if value is None else Fault(value)
    except ValueError:
        return None


class BadRequest(Exception):
    def __init__(self, status: int, message: str, error_type: str, param: str | None) -> None:
        super().__init__(message)
        self.status, self.error_type, self.param = status, error_type, param


def error_response(status: int, message: str, error_type: str, param: str | None) -> web.Response:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": status}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def count_prompt_tokens(body: dict[str, Any]) -> int:
    """One token per whitespace-separated word; chat adds 4 per message for the template."""
    messages = body.get("messages")
    if isinstance(messages, list):
        total = 0
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            total += 4 + (len(content.split()) if isinstance(content, str) else 0)
        return total
    prompt = body.get("prompt", body.get("token_ids"))  # token_ids: /inference/v1/generate
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if isinstance(prompt, str):
        return max(1, len(prompt.split()))
    raise BadRequest(400, "Either prompt or messages must be given.", "BadRequestError", "prompt")


def task_of(headers: Any, body: dict[str, Any]) -> str:
    header = headers.get(C.Header.TASK)
    if header:
        return str(header).strip().lower()
    text = orjson.dumps(body.get("prompt") or body.get("messages") or "").decode()
    at = text.find(TASK_MARKER)
    if at >= 0:
        end = text.find("]", at)
        if end > at:
            return text[at + len(TASK_MARKER) : end]
    return "chat"


def limits(body: Any, model: str, max_model_len: int, chat: bool) -> tuple[int, int]:
    """(prompt tokens, max tokens) of a valid request; raises BadRequest as vLLM would."""
    if not isinstance(body, dict):
        raise BadRequest(400, "The request body must be a JSON object.", "BadRequestError", None)
    if body.get("model", model) != model:
        raise BadRequest(
            404, f"The model `{body.get('model')}` does not exist.", "NotFoundError", "model"
        )
    n = body.get("n", 1)
    temperature = body.get("temperature", 1.0)
    if n != 1 and temperature == 0:
        raise BadRequest(
            400, f"n must be 1 when using greedy sampling, got {n}.", "BadRequestError", None
        )
    prompt_tokens = count_prompt_tokens(body)
    default_max = max_model_len - prompt_tokens if chat else 16
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or default_max
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest(400, "max_tokens must be at least 1.", "BadRequestError", "max_tokens")
    if max_tokens > max_model_len:
        raise BadRequest(
            400,
            f"max_tokens={max_tokens} cannot be greater than max_model_len={max_model_len}. "
            f"Please request fewer output tokens. (parameter=max_tokens, value={max_tokens})",
            "BadRequestError",
            "max_tokens",
        )
    if prompt_tokens + max_tokens > max_model_len:
        raise BadRequest(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, your "
            f"request has {prompt_tokens + max_tokens} tokens.",
            "BadRequestError",
            "input_tokens",
        )
    return prompt_tokens, max_tokens
