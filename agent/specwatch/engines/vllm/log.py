"""vLLM's periodic stats lines: `SpecDecoding metrics: ...` and `Engine NNN: ...`, parsed by key.

Tolerates the `(APIServer pid=N)` prefix or its absence, ANSI colours, the year-less local
timestamp, `GPU`/`CPU`/`XPU` KV cache wording and any field order. Other lines are not ours
(None). A spec line that cannot be read raises LogParseFailure with a bounded `reason`.
"""

from __future__ import annotations

import math
import re

from specwatch.conventions import ParseReason
from specwatch.core.records import EngineLogRecord, SpecLogRecord

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SPEC = re.compile(r"SpecDecoding metrics:\s*(?P<body>.*)$")
_ENGINE = re.compile(r"Engine (?P<engine>\d+):\s*(?P<body>.*)$")
# A field starts with a capitalised key and a colon; values may hold ", " (per-position list).
_FIELD = re.compile(r"(?:^|,\s+)(?P<key>[A-Z][A-Za-z /\-]*?):\s+")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


class LogParseFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _fields(body: str) -> dict[str, str]:
    matches = list(_FIELD.finditer(body))
    out = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        out[match["key"].strip().lower()] = body[match.end() : end].strip()
    return out


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    match = _NUMBER.search(text)
    if match is None:
        return None
    value = float(match[0])
    return value if math.isfinite(value) else None


def _count(fields: dict[str, str], *keys: str) -> int:
    for key in keys:
        if key in fields:
            value = _number(fields[key])
            if value is None or value < 0 or value != int(value):
                raise LogParseFailure(ParseReason.BAD_NUMBER)
            return int(value)
    raise LogParseFailure(ParseReason.MISSING_FIELD)


def parse_line(line: str) -> SpecLogRecord | EngineLogRecord | None:
    """The stats record on one log line, or None for any other line."""
    if "SpecDecoding metrics" not in line and "Engine " not in line:
        return None  # the common case, decided without a regex
    text = _ANSI.sub("", line).rstrip("\r\n")
    spec = _SPEC.search(text)
    if spec is not None:
        fields = _fields(spec["body"])
        accepted = _count(fields, "accepted")
        drafted = _count(fields, "drafted")
        if accepted > drafted:
            raise LogParseFailure(ParseReason.INCONSISTENT)
        positions = fields.get("per-position acceptance rate", "")
        per_position = tuple(float(v) for v in _NUMBER.findall(positions))
        return SpecLogRecord(
            accepted=accepted,
            drafted=drafted,
            mean_acceptance_length=_number(fields.get("mean acceptance length")),
            per_position=per_position,
        )
    engine = _ENGINE.search(text)
    if engine is None or "throughput" not in engine["body"]:
        return None  # e.g. "Engine 000 started" style lines are not stats
    fields = _fields(engine["body"])
    kv = next((v for k, v in fields.items() if k.endswith("kv cache usage")), None)
    kv_percent = _number(kv)

    def as_int(key: str) -> int | None:
        value = _number(fields.get(key))
        return None if value is None else int(value)

    return EngineLogRecord(
        engine=int(engine["engine"]),
        running=as_int("running"),
        waiting=as_int("waiting"),
        kv_cache_usage=None if kv_percent is None else kv_percent / 100.0,
        prompt_throughput=_number(fields.get("avg prompt throughput")),
        generation_throughput=_number(fields.get("avg generation throughput")),
    )
