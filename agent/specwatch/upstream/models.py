"""`GET /v1/models`, which every engine answers in OpenAI's shape: the scraper reads the one
model an unlabelled /metrics counts (llama.cpp's, TensorRT-LLM's), the config watch the engine
its `owned_by` names (engines/detect.py)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

MODELS_PATH = "/v1/models"


async def listed_models(session: aiohttp.ClientSession, upstream: str) -> Any | None:
    """The upstream's /v1/models document, or None when it cannot be had or read (asked
    again by the caller's next look)."""
    try:
        async with session.get(upstream.rstrip("/") + MODELS_PATH) as response:
            body = await response.read()
        return orjson.loads(body) if response.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, OSError, orjson.JSONDecodeError):
        return None


def first_model(document: Any) -> str | None:
    """The id of the first model a /v1/models document lists."""
    data = document.get("data") if isinstance(document, dict) else None
    card = data[0] if isinstance(data, list) and data else None
    model = card.get("id") if isinstance(card, dict) else None
    return model if isinstance(model, str) and model else None
