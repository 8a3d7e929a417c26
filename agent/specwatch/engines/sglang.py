"""SGLang's OpenAI-compatible answers: asking for its per-request details, and taking them back
out so that the client gets exactly what it would have got.

SGLang (>= 0.5.19, sglang PR #33518) returns a request's speculative details only when the
request says `"return_spec_tokens_details": true`, at the response's top level under
`sglext.spec_tokens_details` (an object; a list, one per choice, when `n` > 1). A stream gets
them in a chunk of their own with `"choices": []`, before the usage chunk. `sglext` holds other
extensions a client may ask for (`cached_tokens_details`, `routed_experts`), and SGLang leaves
`sglext` out of an answer in which none was asked for; a stream's sglext chunk is sent only
when one was.

The detail is taken out of the bytes, not by decoding and encoding again: every other byte stays
as SGLang wrote it (a number keeps its spelling). The standard library's JSON scanner finds each
member's span (it is C, and it is the one JSON grammar Python ships); a byte-preserving editor
is not among the well-kept libraries.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

FLAG = "return_spec_tokens_details"
EXT = "sglext"
DETAILS = "spec_tokens_details"
_FLAG_MEMBER = b'"' + FLAG.encode() + b'":true,'

_WHITESPACE = frozenset(" \t\n\r")
_DECODER = json.JSONDecoder()
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]  # C, untyped in typeshed


def wants(body: dict[str, Any]) -> bool:
    """Whether a request body already says what it wants of the details (true or false: a
    client that says false is not overruled)."""
    return FLAG in body


def asking(raw: bytes) -> bytes:
    """A JSON object request body asking for the details: the member written in after the
    opening brace, every byte the client sent kept. For a body with at least one member."""
    at = raw.index(b"{") + 1
    return raw[:at] + _FLAG_MEMBER + raw[at:]


def details(obj: dict[str, Any]) -> Any:
    """The `sglext.spec_tokens_details` of an answer or chunk: an object, or None (absent, or a
    list for several choices: one request's details are per choice then, not per request)."""
    ext = obj.get(EXT)
    found = ext.get(DETAILS) if isinstance(ext, dict) else None
    if isinstance(found, list):
        found = found[0] if len(found) == 1 else None
    return found if isinstance(found, dict) else None


def _skip(text: str, at: int) -> int:
    """Past the JSON whitespace at `at`."""
    while text[at : at + 1] in _WHITESPACE:
        at += 1
    return at


class _Member(NamedTuple):
    key: str
    begins: int  # the key's opening quote
    value: int  # the value's first character
    ends: int  # past the value's last


def _members(text: str, start: int) -> list[_Member]:
    """An object's members, `text[start]` being its "{". Raises ValueError on anything that
    is not JSON."""
    members: list[_Member] = []
    at = _skip(text, start + 1)
    if text[at : at + 1] == "}":
        return members
    while True:
        if text[at : at + 1] != '"':
            raise ValueError("an object member without a key")
        key, end = _scanstring(text, at + 1)
        end = _skip(text, end)
        if text[end : end + 1] != ":":
            raise ValueError("a key without a value")
        value = _skip(text, end + 1)
        _, end = _DECODER.raw_decode(text, value)
        members.append(_Member(key, at, value, end))
        at = _skip(text, end)
        if text[at : at + 1] == "}":
            return members
        if text[at : at + 1] != ",":
            raise ValueError("members not separated by a comma")
        at = _skip(text, at + 1)


def _cut(text: str, members: list[_Member], index: int) -> str:
    """`text` without the member at `index` and one comma beside it."""
    member = members[index]
    if index + 1 < len(members):
        return text[: member.begins] + text[members[index + 1].begins :]
    if index > 0:
        return text[: members[index - 1].ends] + text[member.ends :]
    return text[: member.begins] + text[member.ends :]


def _find(members: list[_Member], key: str) -> int | None:
    return next((i for i, member in enumerate(members) if member.key == key), None)


def without_details(data: bytes) -> bytes | None:
    """A JSON answer or chunk without `sglext.spec_tokens_details`, and without `sglext` when
    nothing else was in it (SGLang leaves it out then); None when there is none to take out,
    or the data is not a JSON object (relayed as it is)."""
    try:
        text = data.decode()
        top = _skip(text, 0)
        if text[top : top + 1] != "{":
            return None
        members = _members(text, top)
        ext = _find(members, EXT)
        if ext is None or text[members[ext].value] != "{":
            return None
        inner = _members(text, members[ext].value)
    except (ValueError, UnicodeDecodeError):
        return None
    which = _find(inner, DETAILS)
    if which is None:
        return None
    if len(inner) == 1:
        return _cut(text, members, ext).encode()
    return _cut(text, inner, which).encode()
