"""What the proxy says and passes on itself: the headers it forwards, and its own errors in
OpenAI's shape (so clients handle them as usual)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web
from multidict import CIMultiDict

# Hop-by-hop headers (RFC 9110 7.6.1) and those the transport recomputes.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def forwardable(headers: Any) -> CIMultiDict[str]:
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        if name.lower() not in _HOP_BY_HOP:
            out.add(name, value)
    return out


def openai_error(status: int, message: str, error_type: str) -> web.Response:
    """An error in the shape vLLM and OpenAI use, so clients handle it as usual."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": status}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def refusal(status: int, message: str) -> web.Response:
    """specwatch's own refusal (408, 413, 503) in OpenAI's error shape."""
    error_type = {408: "RequestTimeout", 413: "RequestTooLarge"}.get(status, "ServiceUnavailable")
    response = openai_error(status, message, error_type)
    if status == 503:
        response.headers["Retry-After"] = "1"
    return response


UPSTREAM_LOST_EVENT = (
    b'data: {"error": {"message": "specwatch: the upstream connection was lost mid-stream", '
    b'"type": "BadGateway", "param": null, "code": 502}}\n\n'
)
