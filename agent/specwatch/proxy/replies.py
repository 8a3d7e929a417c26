"""What the proxy says itself: its own errors in OpenAI's shape (so clients handle them as
usual), as a head's headers and a body."""

from __future__ import annotations

import orjson

from specwatch.proxy.wire import Headers

_JSON: Headers = [(b"content-type", b"application/json")]
_ERROR_TYPES = {408: "RequestTimeout", 413: "RequestTooLarge", 502: "BadGateway"}


def openai_error(status: int, message: str) -> tuple[Headers, bytes]:
    """An error in the shape vLLM and OpenAI use: headers and body."""
    error_type = _ERROR_TYPES.get(status, "ServiceUnavailable")
    body = {"error": {"message": message, "type": error_type, "param": None, "code": status}}
    headers = list(_JSON)
    if status == 503:
        headers.append((b"retry-after", b"1"))
    return headers, orjson.dumps(body)


UPSTREAM_LOST_EVENT = (
    b'data: {"error": {"message": "specwatch: the upstream connection was lost mid-stream", '
    b'"type": "BadGateway", "param": null, "code": 502}}\n\n'
)
