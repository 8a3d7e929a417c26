"""What observing a request costs the proxy, counted in instructions: the same stream relayed on a
path specwatch observes and on one it does not, each through its own proxy run under valgrind's
callgrind.

CPU seconds from /proc (benchmarks/observation_cost.py) move with what else the machine does;
an instruction count does not, so one run can tell a change of a few percent. Each proxy is
warmed with `--warm` requests, its counters zeroed (`callgrind_control -z`), then `--requests`
streaming requests are sent and the counters dumped: the instructions a request, observed and
not, and their difference. What the relay does depends a little on timing (how many pieces one
read brings), so repeated runs differ by a few percent. Needs valgrind (apt-get install valgrind).

    .venv/bin/python benchmarks/observation_instructions.py [--requests 1000] [--pythonpath DIR]
        [--keep DIR]   (the dumps, for `callgrind_annotate --inclusive=yes --tree=calling`)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import tempfile
from pathlib import Path

from observation_cost import (
    OBSERVED,
    UNOBSERVED,
    free_port,
    parser,
    proxy_command,
    round_of,
    stop,
    upstream,
    wait_up,
)


async def control(option: str, pid: int) -> None:
    process = await asyncio.create_subprocess_exec(
        "callgrind_control", option, str(pid),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    if await process.wait():
        raise SystemExit(f"callgrind_control {option} {pid} failed")


async def accepting(port: int) -> None:
    """Wait until `port` takes connections (the proxy's port opens after the admin port's)."""
    for _ in range(1200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise SystemExit(f"port {port} did not open")


async def drive(port: int, admin: int, pid: int, path: str, args: argparse.Namespace) -> None:
    for _ in range(20):  # a proxy under valgrind takes a while to start
        try:
            await wait_up(f"http://127.0.0.1:{admin}/healthz")
            break
        except SystemExit:
            continue
    await accepting(port)
    base = f"http://127.0.0.1:{port}"
    await round_of(base + path, args.warm, args.clients)
    await asyncio.sleep(1.0)
    await control("-z", pid)
    await round_of(base + path, args.requests, args.clients)
    await asyncio.sleep(2.0)  # the analysis' queue drained: its ingest counted
    await control("-d", pid)


def instructions(path: str, args: argparse.Namespace, work: Path) -> int:
    """The instructions the proxy ran for `args.requests` requests on `path`."""
    up, port, admin = free_port(), free_port(), free_port()
    out = work / f"callgrind{path.replace('/', '_')}.out"
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    stream = upstream(up, args)
    proxy = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
         *proxy_command(up, port, admin)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        asyncio.run(drive(port, admin, proxy.pid, path, args))
    finally:
        stop(proxy, stream)
    dumped = out.with_name(out.name + ".1")  # the dump after the measured requests
    totals = re.search(rb"^summary: (\d+)", dumped.read_bytes(), re.MULTILINE)
    if totals is None:
        raise SystemExit(f"no summary line in {dumped}")
    return int(totals.group(1))


def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.keep or scratch)
        work.mkdir(parents=True, exist_ok=True)
        seen = instructions(OBSERVED, args, work) / args.requests
        unseen = instructions(UNOBSERVED, args, work) / args.requests
    print(
        f"observed {seen / 1e3:.0f}k, not observed {unseen / 1e3:.0f}k instructions a request: "
        f"the observation {(seen - unseen) / 1e3:.0f}k"
    )


if __name__ == "__main__":
    options = parser(__doc__, requests=1000, gap=0.002)
    options.add_argument("--warm", type=int, default=200)
    options.add_argument("--pythonpath", default="", help="a build (tools/build_compiled.sh)")
    options.add_argument(
        "--keep", default="", help="a directory to keep the dumps in, for callgrind_annotate"
    )
    main(options.parse_args())
