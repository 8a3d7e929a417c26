"""The byte budget holds: the proxy's peak memory under many large JSON bodies at once.

An upstream answers every request with the same JSON body (`--body-mib`, sent in 64 KiB pieces
a few ms apart, so that many bodies are half-received at once); `--clients` clients post
`--requests` requests through `specwatch proxy` (a subprocess, its RSS sampled every 20 ms
from /proc). Run twice, alternating, in one process: with `limits.max_observed_bytes` at
`--budget-mib`, and with a budget too large to matter (what specwatch did before it had one:
every body kept whole until complete). Every client must get every byte either way; the
bodies that found no room are counted unread (`parse_errors{reason="memory_budget"}`).

    .venv/bin/python benchmarks/memory_ceiling.py [--body-mib 4] [--clients 64] [--budget-mib 32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import orjson
import psutil
from aiohttp import web
from specwatch.upstream.child import free_port

ROOT = Path(__file__).resolve().parents[1]
SPECWATCH = str(Path(sys.executable).with_name("specwatch"))
PIECE = 64 * 1024


def body_of(mib: float) -> bytes:
    text = "x" * int(mib * 1024 * 1024)
    usage = {"prompt_tokens": 10, "completion_tokens": 100, "total_tokens": 110}
    return orjson.dumps({"id": "b", "model": "m", "choices": [{"text": text}], "usage": usage})


async def upstream(body: bytes) -> tuple[web.AppRunner, int]:
    async def completions(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = len(body)
        await response.prepare(request)
        for at in range(0, len(body), PIECE):
            await response.write(body[at : at + PIECE])
            await asyncio.sleep(0.002)
        await response.write_eof()
        return response

    async def health(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


async def one_run(
    up: int, body: bytes, budget: int, clients: int, requests: int
) -> tuple[float, float, int, int]:
    """Peak and idle RSS (MiB) of the proxy, responses complete, bodies unread for the budget."""
    port, admin = free_port(), free_port()
    env = {
        **os.environ,
        "SPECWATCH_LIMITS__MAX_RESPONSE_BYTES": str(len(body) + 1024),
        "SPECWATCH_LIMITS__MAX_OBSERVED_BYTES": str(budget),
        "SPECWATCH_LOG_LEVEL": "warning",
    }
    argv = [SPECWATCH, "proxy", "--upstream", f"http://127.0.0.1:{up}", "--port", str(port),
            "--admin-port", str(admin)]  # fmt: skip
    process = await asyncio.create_subprocess_exec(*argv, env=env, stdout=subprocess.DEVNULL)
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(200):
                try:
                    async with session.get(f"http://127.0.0.1:{admin}/healthz") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
            proc = psutil.Process(process.pid)
            idle = proc.memory_info().rss / 2**20
            peak, complete, queue = idle, 0, asyncio.Queue[int]()
            for i in range(requests):
                queue.put_nowait(i)

            async def client() -> None:
                nonlocal complete
                while not queue.empty():
                    queue.get_nowait()
                    url = f"http://127.0.0.1:{port}/v1/completions"
                    async with session.post(url, json={"prompt": "p"}) as response:
                        data = await response.read()  # (not `complete += await ...`: lost counts)
                        complete += data == body

            async def sample() -> None:
                nonlocal peak
                while True:
                    peak = max(peak, proc.memory_info().rss / 2**20)
                    await asyncio.sleep(0.02)

            sampler = asyncio.create_task(sample())
            await asyncio.gather(*(client() for _ in range(clients)))
            await asyncio.sleep(0.5)  # the analysis reads what is queued
            sampler.cancel()
            async with session.get(f"http://127.0.0.1:{admin}/metrics") as response:
                text = await response.text()
        unread = sum(
            int(float(line.rsplit(" ", 1)[1]))
            for line in text.splitlines()
            if line.startswith("specwatch_parse_errors_total") and "memory_budget" in line
        )
        return peak, idle, complete, unread
    finally:
        process.terminate()
        await process.wait()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--body-mib", type=float, default=4.0)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--budget-mib", type=float, default=32.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    body = body_of(args.body_mib)
    runner, up = await upstream(body)
    ways = {
        f"budget {args.budget_mib:g} MiB": int(args.budget_mib * 2**20),
        "no budget in effect (64 GiB)": 64 * 2**30,
    }
    print(
        f"{args.requests} requests, {args.clients} at once, bodies of {len(body) / 2**20:.2f} MiB"
    )
    try:
        for round_ in range(args.rounds):
            for name, budget in ways.items():
                peak, idle, complete, unread = await one_run(
                    up, body, budget, args.clients, args.requests
                )
                print(
                    f"round {round_ + 1}, {name}: proxy RSS peak {peak:.0f} MiB "
                    f"(idle {idle:.0f}), {complete}/{args.requests} responses complete, "
                    f"{unread} bodies unread for the budget"
                )
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    started = time.perf_counter()
    asyncio.run(main())
    print(f"({time.perf_counter() - started:.0f} s)")
