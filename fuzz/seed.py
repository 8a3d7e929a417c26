"""Write a seed corpus per fuzz target from the real vLLM captures and generated examples.

.venv/bin/python fuzz/seed.py OUT_DIR   (then OUT_DIR/<target>/ holds the seeds)
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.gen.alertmanager import TEMPLATES  # noqa: F401  # the package imports cleanly
from specwatch.store.cyclelog import to_line

CAPTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm-0.32.0-cpu"


def seeds() -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {"response": [], "log": [], "cyclelog": [], "config": []}
    for path in sorted(CAPTURES.glob("*.json")) + sorted(CAPTURES.glob("*.sse")):
        out["response"].append(path.read_bytes())
    out["log"] = [line for line in (CAPTURES / "vllm_ngram.log").read_bytes().splitlines() if line][
        :80
    ]
    record = RequestRecord(
        ts=1.0, request_id="r", model="m", task="code", outcome="observed", prompt_tokens=10,
        completion_tokens=12, spec=SpecDecodeBlock(3, (3, 3, 3), (3, 1, 0)),
        latency=Latency(ttft=0.01, tpot=0.002, e2e=0.1),
    )  # fmt: skip
    out["cyclelog"] = [to_line(record), b'{"v": 1}\n', orjson.dumps({"v": 2})]
    out["config"] = [
        b"port: 8000\nctx_buckets: [512, 2048]\nzones: {green: 0.7, red: 0.5}\n",
        b"tasks:\n  allowlist: [chat, code]\n  by_model: {m: code}\n",
        b"window: {length_seconds: 60, bucket_seconds: 5}\n",
    ]
    return out


def main() -> None:
    out = Path(sys.argv[1])
    for target, items in seeds().items():
        (out / target).mkdir(parents=True, exist_ok=True)
        for i, data in enumerate(items):
            (out / target / f"seed-{i:03d}").write_bytes(data)


if __name__ == "__main__":
    main()
