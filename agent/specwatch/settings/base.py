"""What every settings part shares: the frozen, strict model and the list parser."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

# the analysis clock's shortest step: far below it int(ts // bucket) overflows, ts + step == ts
MIN_STEP_SECONDS = 0.001


def split_csv(value: Any) -> Any:
    """Accept '512,2048' (flags, environment) as well as a YAML/JSON list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def http_url(value: str) -> str:
    """An upstream's base URL without its trailing slash: one the proxy can connect to.

    A path is refused, not stripped: `http://host:8001/v1` (the OpenAI client's base URL
    habit) would have specwatch probe `/v1/health` and never see vLLM ready, and a path that
    is not `/v1` could be meant; the one-line error says what to give instead."""
    parts = urlsplit(value)  # ValueError for a broken IPv6 host, and .port for a bad port
    if not value.startswith(("http://", "https://")) or not parts.hostname or parts.port == 0:
        raise ValueError("must be http:// or https:// with a host (and a port, if any)")
    if parts.path.strip("/") or parts.query or parts.fragment:
        base = f"{parts.scheme}://{parts.netloc}"
        raise ValueError(
            f"must be the server's address without a path, e.g. {base}: specwatch forwards "
            f"each request's own path (/v1/...) and reads /health, /metrics and /version at "
            f"the root"
        )
    return value.rstrip("/")
