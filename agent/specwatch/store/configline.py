"""A cycle log's config line, the first of every file a sidecar opens: the speculative config
its records ran under (`/status`'s `config`), for replay and `worst` to know the verifier and
the schedule."""

from __future__ import annotations

import orjson

from specwatch.core.records import SpecConfig

SCHEMA_VERSION = 1


def config_line(config: SpecConfig) -> bytes:
    return orjson.dumps({"v": SCHEMA_VERSION, "config": config.as_dict()}) + b"\n"


def read_config_line(line: bytes) -> SpecConfig | None:
    """A file's config line as the config; None when the line is not one."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or obj.get("v") != SCHEMA_VERSION or "request_id" in obj:
        return None
    config = obj.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        return None
    schedule = config.get("schedule")
    rows = tuple(
        (row[0], row[1], row[2])
        for row in (schedule if isinstance(schedule, list) else ())
        if isinstance(row, list) and len(row) == 3 and all(isinstance(x, int) for x in row)
    )
    k = config.get("num_speculative_tokens")

    def text(key: str) -> str | None:
        value = config.get(key)
        return value if isinstance(value, str) else None

    return SpecConfig(
        id=config["id"],
        method=text("method"),
        draft=text("draft"),
        num_speculative_tokens=k if isinstance(k, int) and not isinstance(k, bool) else None,
        schedule=rows,
        rejection_sample_method=text("rejection_sample_method"),
        vllm_version=text("vllm_version"),
        track=text("track") or "stable",
        model=text("model"),
        verifier=text("verifier") or "lossless",
        engine=text("engine") or "vllm",
        gate=text("gate"),
    )
