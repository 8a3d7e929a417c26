"""The latency a gateway adds, measured the way the field measures it (cuihuan/llm-gateway-bench:
sequential requests on loopback to a mock upstream, rounds interleaved, the median of the round
medians with their IQR), specwatch beside nginx, LiteLLM and Portkey's gateway in one run.

The mock upstream is `specwatch sim --no-sleep` (vLLM's answers, speculative block included,
without simulated latency). Each round sends, for each workload, `--requests` sequential
requests through each target in turn (the order rotating between rounds), each over its own
kept-alive connection: a request's latency is from sending it to its answer read to the end.
A target's added latency in a round is its median less the direct median of the same round;
the figure is the median over rounds, with the quartiles of the rounds. CPU per request is the
target's processes' CPU time (children and threads included: nginx's worker, LiteLLM's, Node's)
over its requests, from /proc/*/schedstat in nanoseconds, so a busy machine moves the wall
time, not the figure.

Workloads: chat answered whole (8 tokens), streamed (8 tokens) and streamed long (about 64
events: the simulator drafts, so a stream has one event per engine step; the count is
printed). Targets: direct, nginx (one worker, keep-alive upstream, no buffering), specwatch
(this checkout, pure Python), specwatch compiled (`--compiled DIR`: tools/build_compiled.sh's
target), LiteLLM's proxy (`--litellm BIN`: a venv's `litellm`), Portkey's gateway
(`--portkey DIR`: where `npm install @portkey-ai/gateway` ran; Node 20 needs
`@hono/node-server` 1.14.2, and its streams fail even then: Portkey-AI/gateway#1389, #1550),
and any other specwatch tree (`--build NAME=PYTHONPATH`, repeatable). A target whose tool is
not given or not found is left out, and said so.

    .venv/bin/python benchmarks/gateway_overhead.py [--rounds 7] [--requests 25]
        [--compiled /tmp/cbuild] [--litellm ~/.cache/specwatch-perf/litellm/bin/litellm]
        [--portkey ~/.cache/specwatch-perf/portkey] [--out result.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psutil
from specwatch.upstream.child import free_port

ROOT = Path(__file__).resolve().parent.parent
MODEL = "sim-llama"
WORKLOADS: dict[str, dict[str, object]] = {
    "whole, 8 tokens": {"max_tokens": 8, "stream": False},
    "streamed, 8 tokens": {"max_tokens": 8, "stream": True},
    "streamed, ~64 events": {"max_tokens": 195, "stream": True},
}


@dataclass
class Target:
    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    pid: int | None = None  # the process whose CPU (with its children's) is counted
    added: dict[str, list[float]] = field(default_factory=dict)  # workload -> per round
    cpu: dict[str, list[float]] = field(default_factory=dict)  # workload -> per request
    failed: dict[str, str] = field(default_factory=dict)  # workload -> what it answered


@contextmanager
def started(command: list[str], env: dict[str, str] | None = None) -> Iterator[int]:
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield proc.pid
        finally:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.terminate()
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def cpu_seconds(pid: int) -> float:
    """CPU time of the process and its children, every thread, from /proc/*/schedstat (in
    nanoseconds: /proc's stat counts clock ticks of 10 ms, coarser than a request)."""
    process = psutil.Process(pid)
    total = 0
    for p in (process, *process.children(recursive=True)):
        for task in Path(f"/proc/{p.pid}/task").glob("*/schedstat"):
            try:
                total += int(task.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended meanwhile
    return total / 1e9


async def ready(url: str, headers: dict[str, str], name: str, seconds: float = 90.0) -> None:
    """Until a chat request through `url` is answered 200."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.post(url, json=body, headers=headers) as response:
                    await response.read()
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} at {url} did not answer in {seconds:.0f} s")
            await asyncio.sleep(0.5)


async def block(
    session: aiohttp.ClientSession, target: Target, workload: dict[str, object], n: int, seed: int
) -> list[float]:
    """`n` sequential requests through `target`: each one's seconds to its last byte."""
    out = []
    for i in range(n):
        messages = [{"role": "user", "content": f"request {seed}-{i}: write a loop"}]
        body = {"model": MODEL, "messages": messages, **workload}
        start = time.perf_counter()
        async with session.post(target.url, json=body, headers=target.headers) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"{target.name}: HTTP {response.status}")
        out.append(time.perf_counter() - start)
    return out


async def measure(targets: list[Target], rounds: int, n: int) -> None:
    sessions = {t.name: aiohttp.ClientSession() for t in targets}
    try:
        for target in targets:  # warm up: connections, caches, a JIT; a failure is said
            for name, workload in WORKLOADS.items():
                try:
                    await block(sessions[target.name], target, workload, 5, -1)
                except (RuntimeError, aiohttp.ClientError) as error:
                    target.failed[name] = str(error)
        for r in range(rounds):
            order = targets[r % len(targets) :] + targets[: r % len(targets)]
            for name, workload in WORKLOADS.items():
                medians: dict[str, float] = {}
                for target in order:
                    if name in target.failed:
                        continue
                    before = cpu_seconds(target.pid) if target.pid else 0.0
                    times = await block(sessions[target.name], target, workload, n, r)
                    if target.pid:
                        used = cpu_seconds(target.pid) - before
                        target.cpu.setdefault(name, []).append(used / n)
                    medians[target.name] = statistics.median(times)
                for target in targets:
                    if name in target.failed:
                        continue
                    added = medians[target.name] - medians["direct"]
                    target.added.setdefault(name, []).append(added)
    finally:
        for session in sessions.values():
            await session.close()


def nginx_conf(directory: Path, port: int, upstream: int) -> Path:
    conf = directory / "nginx.conf"
    conf.write_text(
        f"worker_processes 1; pid {directory}/nginx.pid; error_log {directory}/error.log warn;\n"
        "daemon off;\nevents { worker_connections 1024; }\n"
        f"http {{ access_log off; client_body_temp_path {directory}; proxy_temp_path "
        f"{directory};\n  upstream up {{ server 127.0.0.1:{upstream}; keepalive 32; }}\n"
        f"  server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://up; "
        'proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; } } }\n'
    )
    return conf


def litellm_config(directory: Path, upstream: int) -> Path:
    conf = directory / "litellm.yaml"
    conf.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: http://127.0.0.1:{upstream}/v1\n"
        "      api_key: none\n"
    )
    return conf


def portkey_entry(directory: Path) -> Path | None:
    package = directory / "node_modules" / "@portkey-ai" / "gateway"
    for candidate in ("build/start-server.js", "dist/start-server.js"):
        if (package / candidate).is_file():
            return package / candidate
    return None


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


async def run(args: argparse.Namespace) -> dict[str, object]:
    python = str(ROOT / ".venv" / "bin" / "python")
    env = {**os.environ, "SPECWATCH_LOG_LEVEL": "warning", "PYTHONPATH": str(ROOT / "agent")}
    up = free_port()
    targets: list[Target] = []
    skipped: dict[str, str] = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        sim = [python, "-m", "specwatch", "sim", "--no-sleep", "--port", str(up)]
        stack.enter_context(started(sim, env))
        chat = "/v1/chat/completions"
        await ready(f"http://127.0.0.1:{up}{chat}", {}, "the simulator")
        targets.append(Target("direct", f"http://127.0.0.1:{up}{chat}"))
        if shutil.which("nginx"):
            port = free_port()
            conf = nginx_conf(work, port, up)
            pid = stack.enter_context(started(["nginx", "-c", str(conf), "-p", str(work)]))
            targets.append(Target("nginx", f"http://127.0.0.1:{port}{chat}", pid=pid))
        else:
            skipped["nginx"] = "not installed (apt-get install nginx)"
        builds = [("specwatch (pure)", str(ROOT / "agent"))]
        if args.compiled:
            builds.append(("specwatch (compiled)", str(args.compiled)))
        else:
            skipped["specwatch (compiled)"] = "no --compiled DIR (tools/build_compiled.sh)"
        for build in args.build:  # another tree or build side by side: NAME=PYTHONPATH
            name, _, path = build.partition("=")
            builds.append((f"specwatch ({name})", path))
        for name, path in builds:
            port = free_port()
            command = [python, "-m", "specwatch", "proxy", "--upstream",
                       f"http://127.0.0.1:{up}", "--port", str(port),
                       "--admin-port", str(free_port())]  # fmt: skip
            pid = stack.enter_context(started(command, {**env, "PYTHONPATH": path}))
            targets.append(Target(name, f"http://127.0.0.1:{port}{chat}", pid=pid))
        if args.litellm:
            port = free_port()
            conf = litellm_config(work, up)
            command = [str(args.litellm), "--config", str(conf), "--port", str(port),
                       "--num_workers", "1"]  # fmt: skip
            # it refuses to start without a master key; its own access log is off
            key = "sk-specwatch-bench-" + "0123456789abcdef" * 2
            litellm_env = {**os.environ, "LITELLM_MASTER_KEY": key, "LITELLM_LOG": "ERROR"}
            pid = stack.enter_context(started(command, litellm_env))
            headers = {"Authorization": f"Bearer {key}"}
            targets.append(Target("LiteLLM", f"http://127.0.0.1:{port}{chat}", headers, pid))
        else:
            skipped["LiteLLM"] = "no --litellm BIN (pip install 'litellm[proxy]' in a venv)"
        entry = portkey_entry(Path(args.portkey)) if args.portkey else None
        if entry is not None:
            port = free_port()
            command = ["node", str(entry), f"--port={port}", "--headless"]
            pid = stack.enter_context(started(command, {**os.environ, "NODE_ENV": "production"}))
            headers = {
                "x-portkey-provider": "openai",
                "x-portkey-custom-host": f"http://127.0.0.1:{up}/v1",
                "Authorization": "Bearer none",
            }
            targets.append(Target("Portkey", f"http://127.0.0.1:{port}{chat}", headers, pid))
        else:
            skipped["Portkey"] = "no --portkey DIR (npm install @portkey-ai/gateway)"
        for target in targets[1:]:
            await ready(target.url, target.headers, target.name)
        events = await count_events(targets[0])
        await measure(targets, args.rounds, args.requests)
    table: dict[str, object] = {}
    for target in targets[1:]:
        rows: dict[str, dict[str, object]] = {}
        for name in WORKLOADS:
            if name in target.failed:
                rows[name] = {"failed": target.failed[name]}
                continue
            q1, median, q3 = quartiles(target.added[name])
            cpu = statistics.median(target.cpu[name]) if target.cpu.get(name) else None
            rows[name] = {
                "added_ms": median * 1000,
                "iqr_ms": [q1 * 1000, q3 * 1000],
                "cpu_ms_per_request": None if cpu is None else cpu * 1000,
            }
        table[target.name] = rows
    return {
        "rounds": args.rounds,
        "requests": args.requests,
        "events_in_the_long_stream": events,
        "targets": table,
        "skipped": skipped,
    }


async def count_events(direct: Target) -> int:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "count"}],
            **WORKLOADS["streamed, ~64 events"]}  # fmt: skip
    async with aiohttp.ClientSession() as session, session.post(direct.url, json=body) as r:
        text = await r.text()
    return sum(
        1 for line in text.splitlines() if line.startswith("data: ") and "[DONE]" not in line
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=25)
    parser.add_argument("--compiled", type=Path)
    parser.add_argument("--litellm", type=Path)
    parser.add_argument("--portkey", type=Path)
    parser.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="NAME=PYTHONPATH",
        help="one more specwatch side by side (another commit's agent/, a build)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.litellm and not args.litellm.exists():
        args.litellm = None
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2))
    targets = result["targets"]
    assert isinstance(targets, dict)
    print(f"\n{'target':22} {'workload':22} {'added ms (IQR)':>24} {'CPU ms/request':>15}")
    for name, rows in targets.items():
        for workload, row in rows.items():
            if "failed" in row:
                print(f"{name:22} {workload:22} {'failed: ' + row['failed']:>40}")
                continue
            q1, q3 = row["iqr_ms"]
            cpu = "-" if row["cpu_ms_per_request"] is None else f"{row['cpu_ms_per_request']:.3f}"
            added = f"{row['added_ms']:.3f} ({q1:.3f}-{q3:.3f})"
            print(f"{name:22} {workload:22} {added:>24} {cpu:>15}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
