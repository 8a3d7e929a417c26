"""JSON documents of specwatch's own endpoints and commands (/status, the A/B switch, replay).

Keys may be the StrEnum names of conventions.py: serialised as their text.
"""

from __future__ import annotations

import orjson
from aiohttp import web

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


def dumps(document: object) -> bytes:
    return orjson.dumps(document, option=_OPTIONS)


def json_response(document: object, status: int = 200) -> web.Response:
    return web.Response(status=status, body=dumps(document), content_type="application/json")
