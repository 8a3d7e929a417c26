"""What observing a request costs the proxy: the same stream relayed on a path specwatch observes
and on one it does not, side by side in one run.

Starts `stream_upstream.py` (a real vLLM 0.32 stream, one write per event) and `specwatch proxy`
in front of it, then posts rounds of streaming requests alternately to `/v1/completions`
(observed: the SSE rewriter, the usage event read, the record, the analysis' ingest) and to
`/v2/other` (relayed unobserved), `--clients` at a time. CPU per request is the proxy process'
utime + stime from /proc over the round, so a busy machine changes the wall time, not the
figure. The difference of the two is the observation's cost; it is user time (the observed
path makes the same system calls), so its user part is printed too: the system time of a round
moves with what else the machine does (network work is charged to whichever process runs).

    .venv/bin/python benchmarks/observation_cost.py [--rounds 5] [--requests 2000] [--gap 0.002]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

HERE = Path(__file__).resolve().parent
BODY = b'{"model":"tiny-llama","prompt":"def f(x):","max_tokens":64,"stream":true}'
HEADERS = {"Content-Type": "application/json", "X-Task-Type": "code"}
OBSERVED, UNOBSERVED = "/v1/completions", "/v2/other"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of process `pid`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


async def wait_up(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            try:
                async with session.get(url) as response:
                    if response.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


async def round_of(url: str, requests: int, clients: int) -> None:
    left = requests

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            async with session.post(url, data=BODY, headers=HEADERS) as response:
                await response.read()
                if response.status != 200:
                    raise SystemExit(f"{url}: {response.status}")

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))


async def measure(args: argparse.Namespace, port: int, admin: int, pid: int) -> None:
    await wait_up(f"http://127.0.0.1:{admin}/healthz")
    base = f"http://127.0.0.1:{port}"
    await round_of(base + OBSERVED, args.requests // 4, args.clients)  # warm both paths
    await round_of(base + UNOBSERVED, args.requests // 4, args.clients)
    costs: dict[str, list[float]] = {OBSERVED: [], UNOBSERVED: []}
    users: dict[str, list[float]] = {OBSERVED: [], UNOBSERVED: []}
    for r in range(args.rounds):
        order = (OBSERVED, UNOBSERVED) if r % 2 == 0 else (UNOBSERVED, OBSERVED)
        for path in order:
            (user, system), started = cpu_seconds(pid), time.perf_counter()
            await round_of(base + path, args.requests, args.clients)
            await asyncio.sleep(0.3)  # the analysis' queue drained: its ingest counted
            user_after, system_after = cpu_seconds(pid)
            users[path].append((user_after - user) / args.requests * 1e6)
            costs[path].append(users[path][-1] + (system_after - system) / args.requests * 1e6)
            print(
                f"round {r + 1} {path:16} {costs[path][-1]:7.0f} us CPU a request, "
                f"{users[path][-1]:.0f} us of it user time ({time.perf_counter() - started:.1f} s)"
            )
    seen, unseen = costs[OBSERVED], costs[UNOBSERVED]
    diffs = [a - b for a, b in zip(seen, unseen, strict=True)]
    user_diffs = [a - b for a, b in zip(users[OBSERVED], users[UNOBSERVED], strict=True)]
    print(
        f"observed {min(seen):.0f}-{max(seen):.0f} us, not observed {min(unseen):.0f}-"
        f"{max(unseen):.0f} us a request; the observation {statistics.median(diffs):.0f} us "
        f"(median of {len(diffs)} rounds, {min(diffs):.0f}-{max(diffs):.0f}), of user time "
        f"{statistics.median(user_diffs):.0f} us ({min(user_diffs):.0f}-{max(user_diffs):.0f})"
    )


def upstream(port: int, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    """The canned stream (`--events` events, `--gap` s apart) on `port`."""
    return subprocess.Popen(
        [sys.executable, str(HERE / "stream_upstream.py"), str(port), "--events", str(args.events),
         "--gap", str(args.gap)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


def proxy_command(up: int, port: int, admin: int) -> list[str]:
    return [sys.executable, "-m", "specwatch", "proxy", "--upstream", f"http://127.0.0.1:{up}",
            "--port", str(port), "--admin-port", str(admin)]  # fmt: skip


def stop(*processes: subprocess.Popen[bytes]) -> None:
    for process in processes:
        process.terminate()
        process.wait()


def parser(doc: str, requests: int, gap: float) -> argparse.ArgumentParser:
    """The options both observation benchmarks take."""
    out = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    out.add_argument("--requests", type=int, default=requests)
    out.add_argument("--clients", type=int, default=8)
    out.add_argument("--events", type=int, default=20)
    out.add_argument("--gap", type=float, default=gap)
    return out


def main(args: argparse.Namespace) -> None:
    up, port, admin = free_port(), free_port(), free_port()
    stream = upstream(up, args)
    proxy = subprocess.Popen(
        proxy_command(up, port, admin), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        asyncio.run(measure(args, port, admin, proxy.pid))
    finally:
        stop(proxy, stream)


if __name__ == "__main__":
    options = parser(__doc__, requests=800, gap=0.01)
    options.add_argument("--rounds", type=int, default=3)
    main(options.parse_args())
