"""Coverage-guided fuzzing (atheris) of everything specwatch reads from outside.

    .venv/bin/python fuzz/fuzz_targets.py TARGET [CORPUS_DIR] -max_total_time=SECONDS

TARGET: response (JSON bodies and SSE streams), log (vLLM's log lines), cyclelog (cycle-log
lines), config (YAML settings files). Each may raise only its own, documented failure; any other
exception is a crash, and atheris stops with the input that caused it. Seed the corpus with
`fuzz/seed.py` (the real vLLM captures and generated examples).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris

# Only specwatch's own code is instrumented (not pydantic, yaml...: start-up 20 s -> 2 s), and
# with atheris' own loader: the editable install's import hook hid part of it from the
# default (the response target reached 83 coverage edges that way, 117 this way).
with atheris.instrument_imports(include=["specwatch"], enable_loader_override=False):
    from specwatch.engines.vllm.log import LogParseFailure, parse_line
    from specwatch.engines.vllm.response import (
        ParseFailure,
        decode_json,
        event_data,
        is_usage_event,
        parse_response_body,
        parse_response_object,
    )
    from specwatch.proxy.sse import SseSplitter
    from specwatch.settings import ConfigError, load_settings
    from specwatch.store.cyclelog import BadLine, _checked, from_line


def response(data: bytes) -> None:
    with contextlib.suppress(ParseFailure):
        parse_response_body(data)
    splitter = SseSplitter(1 << 16)
    events = splitter.feed(data[: len(data) // 2]) + splitter.feed(data[len(data) // 2 :])
    if b"".join(events) + splitter.flush() != data:
        raise AssertionError("the SSE splitter lost or changed bytes")
    for event in events:
        if is_usage_event(event):
            payload = event_data(event)
            with contextlib.suppress(ParseFailure):
                parse_response_object(decode_json(payload or b""))


def log(data: bytes) -> None:
    with contextlib.suppress(LogParseFailure):
        parse_line(data.decode("utf-8", errors="replace"))


def _read(read: Callable[[bytes], object], data: bytes) -> object:
    try:
        return read(data)
    except BadLine as bad:
        return f"BadLine: {bad}"


def cyclelog(data: bytes) -> None:
    if _read(from_line, data) != _read(_checked, data):
        raise AssertionError("the fast decoder and the checks read a line differently")


_CONFIG = Path(tempfile.mkdtemp(prefix="specwatch-fuzz-")) / "specwatch.yaml"


def config(data: bytes) -> None:
    _CONFIG.write_bytes(data)
    with contextlib.suppress(ConfigError):
        load_settings(_CONFIG)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "response": response,
    "log": log,
    "cyclelog": cyclelog,
    "config": config,
}


def main() -> None:
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
