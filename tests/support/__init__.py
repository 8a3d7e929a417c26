"""Helpers shared by the tests (one place: no test module imports another).

This module: the repository root and the real vLLM captures, read as vLLM sent them.
`http`: reading /metrics, posting, serving apps and sidecars on loopback, polling.
`tools`: the external binaries (promtool, amtool, prometheus, kubectl).
`servers`: real Prometheus and Alertmanager on loopback. `vllm`: a real vLLM through
`specwatch serve`, the tiny models and the prompts built from them.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from specwatch.core.records import SpecDecodeBlock
from specwatch.engines.vllm.response import (
    ParsedResponse,
    decode_json,
    event_data,
    is_usage_event,
    parse_response_body,
    parse_response_object,
)
from specwatch.proxy.sse import SseSplitter

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "vllm-0.32.0-cpu"

# Under mutation testing (tools/mutate.py) every property test runs once per surviving mutant:
# a fixed, smaller set of examples (tests/conftest.py's "mutation" profile). A property that
# needs its own count asks for it through `examples`, which caps it there.
MUTATION = bool(os.environ.get("MUTATION_TESTING"))
MUTATION_EXAMPLES = 25


def examples(wanted: int) -> int:
    """A property's example count: `wanted`, capped under mutation testing."""
    return min(wanted, MUTATION_EXAMPLES) if MUTATION else wanted


@dataclass(frozen=True)
class Captured:
    """One request of a `*_requests.jsonl` capture and vLLM's answer."""

    kind: str
    request: dict[str, Any]
    status: int
    raw: bytes
    stream: bool

    def parsed(self) -> ParsedResponse | None:
        """The response as specwatch reads it: the body, or the stream's usage chunk."""
        if not self.stream:
            return parse_response_body(self.raw)
        for event in SseSplitter(1 << 24).feed(self.raw):
            if is_usage_event(event):
                data = event_data(event)
                assert data is not None
                return parse_response_object(decode_json(data))
        return None

    def spec(self) -> SpecDecodeBlock | None:
        parsed = self.parsed()
        return None if parsed is None else parsed.spec


def captured_requests(name: str) -> Iterator[Captured]:
    """The lines of CAPTURES/<name>_requests.jsonl (tools/capture_vllm.py)."""
    for line in (CAPTURES / f"{name}_requests.jsonl").read_bytes().splitlines():
        obj = orjson.loads(line)
        stream = "sse_b64" in obj
        raw = base64.b64decode(obj["sse_b64"] if stream else obj["body_b64"])
        yield Captured(obj["kind"], obj["request"], obj["status"], raw, stream)


def assert_status_valid(document: object) -> None:
    """The document satisfies docs/status.schema.json (the contract of /status and replay)."""
    import jsonschema

    schema = orjson.loads((ROOT / "docs" / "status.schema.json").read_bytes())
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
