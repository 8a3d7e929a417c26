"""Request mixes the integration tests send through the proxy."""

from __future__ import annotations

import random
from typing import Any

TASK_HEADERS = ["code", "chat", "translation", "summarization", "not-a-task", None]


def mixed_requests(seed: int, n: int) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        chat = i % 2 == 0
        words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(20 + 7 * i))
        body: dict[str, Any] = {"max_tokens": rng.randrange(16, 64), "temperature": 0}
        if chat:
            body["messages"] = [{"role": "user", "content": words}]
        else:
            body["prompt"] = words
        mode = i % 3
        if mode:
            body["stream"] = True
        if mode == 2:
            body["stream_options"] = {"include_usage": True}
        header = TASK_HEADERS[i % len(TASK_HEADERS)]
        headers = {"X-Task-Type": header} if header else {}
        out.append(("/v1/chat/completions" if chat else "/v1/completions", body, headers))
    return out
