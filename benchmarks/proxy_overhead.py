"""Proxy overhead: the same streaming load direct to the simulator and through specwatch.

Starts the simulator and `specwatch proxy` as separate processes, then runs rounds of the same
load (64 concurrent streaming clients that did not ask for usage: the proxy's heaviest path)
alternately direct and through the proxy, and prints requests/s and latency side by side.
On a 2-core machine the client, the proxy and the simulator share the cores: the ratio is an
upper bound on what the proxy costs next to a real GPU server.

    .venv/bin/python benchmarks/proxy_overhead.py [--requests 1500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
from specwatch.upstream.child import free_port


@contextmanager
def process(*args: str) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "SPECWATCH_LOG_LEVEL": "warning"}
    proc = subprocess.Popen([sys.executable, "-m", "specwatch", *args], env=env)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def wait_ready(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(200):
            try:
                async with session.get(url) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} did not become ready")


async def round_of(
    base: str, requests: int, concurrency: int, max_tokens: int
) -> tuple[float, list[float]]:
    latencies: list[float] = []
    next_id = 0
    body = {
        "prompt": "benchmark " * 100,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
    }

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal next_id
        while next_id < requests:
            next_id += 1
            started = time.perf_counter()
            async with session.post(base + "/v1/completions", json={**body, "seed": next_id}) as r:
                async for _ in r.content.iter_any():
                    pass
                assert r.status == 200
            latencies.append(time.perf_counter() - started)

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return requests / elapsed, latencies


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000.0


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--step-ms", type=float, default=2.0)
    args = parser.parse_args()
    sim_port, proxy_port, admin_port = free_port(), free_port(), free_port()
    direct = f"http://127.0.0.1:{sim_port}"
    proxied = f"http://127.0.0.1:{proxy_port}"
    with (
        process("sim", "--port", str(sim_port), "--step-ms", str(args.step_ms)),
        process(
            "proxy",
            "--upstream",
            direct,
            "--port",
            str(proxy_port),
            "--admin-port",
            str(admin_port),
            "--log-level",
            "warning",
        ),  # fmt: skip
    ):
        await wait_ready(direct + "/health")
        await wait_ready(proxied + "/health")
        await round_of(direct, 200, args.concurrency, args.max_tokens)  # warm-up
        await round_of(proxied, 200, args.concurrency, args.max_tokens)
        results: dict[str, tuple[list[float], list[float]]] = {
            "direct": ([], []),
            "proxy": ([], []),
        }
        for _ in range(args.rounds):
            for name, base in (("direct", direct), ("proxy", proxied)):
                rps, latencies = await round_of(
                    base, args.requests, args.concurrency, args.max_tokens
                )
                results[name][0].append(rps)
                results[name][1].extend(latencies)
    print(
        f"{args.rounds} rounds x {args.requests} streaming requests, {args.concurrency} concurrent "
        f"clients, {args.max_tokens} tokens, simulator step {args.step_ms} ms"
    )
    print(f"{'':8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
    figures = {}
    for name, (rates, latencies) in results.items():
        figures[name] = (statistics.median(rates), pct(latencies, 50), pct(latencies, 99))
        print(f"{name:8} {figures[name][0]:8.1f} {figures[name][1]:8.1f} {figures[name][2]:8.1f}")
    d, p = figures["direct"], figures["proxy"]
    print(f"requests/s ratio proxy/direct: {p[0] / d[0]:.3f}")
    print(f"added latency: p50 {p[1] - d[1]:+.1f} ms, p99 {p[2] - d[2]:+.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
