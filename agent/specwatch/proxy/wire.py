"""[compiled] HTTP/1.1 framing for the proxy's own wire protocol: the heads it writes, chunked
framing, and which headers a proxy must not pass on (RFC 9110 7.6.1).

The proxy parses with httptools (llhttp, C) and writes bytes itself: a head is one bytes
object, a body piece one write. Header names and values are passed on as received (bytes).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Final

# Hop-by-hop headers (RFC 9110 7.6.1), and those the proxy computes itself.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"expect",  # the proxy answers 100-continue itself and sends the whole body on
    }
)

Headers = list[tuple[bytes, bytes]]  # names lower-cased, in the order received

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


def forwardable(headers: Headers) -> Headers:
    return [(name, value) for name, value in headers if name not in HOP_BY_HOP]


def header(headers: Headers, name: bytes) -> bytes | None:
    """The first value of header `name` (lower-case), or None."""
    for key, value in headers:
        if key == name:
            return value
    return None


def request_head(method: bytes, target: bytes, host: bytes, headers: Headers, size: int) -> bytes:
    """An upstream request's head: the client's forwardable headers, Host, Content-Length."""
    lines = [method, b" ", target, b" HTTP/1.1\r\nhost: ", host, b"\r\n"]
    for name, value in headers:
        lines += [name, b": ", value, b"\r\n"]
    if size or method in (b"POST", b"PUT", b"PATCH"):
        lines += [b"content-length: ", str(size).encode(), b"\r\n"]
    lines.append(b"\r\n")
    return b"".join(lines)


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b"Unknown"


def response_head(
    status: int,
    reason: bytes | None,
    headers: Headers,
    content_length: int | None,
    keep_alive: bool,
    bodiless: bool = False,
    chunked: bool = True,
) -> bytes:
    """A response head to the client: with its length when known, else chunked, or (`chunked`
    False: an HTTP/1.0 client, which must not get chunked framing) ended by the close."""
    lines = [b"HTTP/1.1 ", str(status).encode(), b" ", reason or _reason(status), b"\r\n"]
    for name, value in headers:
        lines += [name, b": ", value, b"\r\n"]
    if content_length is not None:
        lines += [b"content-length: ", str(content_length).encode(), b"\r\n"]
    elif not bodiless and chunked:
        lines.append(b"transfer-encoding: chunked\r\n")
    if not keep_alive:
        lines.append(b"connection: close\r\n")
    lines.append(b"\r\n")
    return b"".join(lines)


# a chunk's size line for the sizes streamed events have: looked up, where `%` formatting
# costs ~1k instructions a chunk (one a streamed event); 2,048 lines, ~90 KiB
# (Final: a static in the compiled build)
_SIZE_LINES: Final = tuple(b"%x\r\n" % n for n in range(2048))
_LOOKED_UP: Final = len(_SIZE_LINES)


def chunk(data: bytes) -> bytes:
    """One piece of a chunked body."""
    n = len(data)
    return (_SIZE_LINES[n] if n < _LOOKED_UP else b"%x\r\n" % n) + data + b"\r\n"
