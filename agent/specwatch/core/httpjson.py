"""JSON documents of specwatch's own endpoints and commands (/status, the A/B switch, replay).

Keys may be the StrEnum names of conventions.py: serialised as their text. aiohttp is imported
when a response is first made, not with `dumps`: `replay --json` and `advise --json` would load
it (a fifth of a second) for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from aiohttp import web

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


def dumps(document: object) -> bytes:
    return orjson.dumps(document, option=_OPTIONS)


def json_response(document: object, status: int = 200) -> web.Response:
    from aiohttp import web

    return web.Response(status=status, body=dumps(document), content_type="application/json")
