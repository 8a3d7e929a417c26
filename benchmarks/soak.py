"""Soak: mixed load through the proxy against the simulator, resources sampled every minute.

Starts the simulator and `specwatch proxy` as processes, drives the demo's mixed workload
(streams and not, chat and completions, short to long prompts) for `--minutes`, and samples the
proxy's RSS and open file descriptors (psutil), its event-loop tasks and the size of its
/metrics page every minute. Target: flat, within 5% after the warm-up.

    .venv/bin/python benchmarks/soak.py [--minutes 30] [--concurrency 8] [--ab]

`--ab` adds a baseline simulator (no speculation): 10% of the traffic goes there, and the
shadow check compares 20% of the greedy requests with it in the background — the paths that
hold extra tasks and connections.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time

import aiohttp
import psutil
from specwatch.sim.workload import run_load
from specwatch.upstream.child import free_port

WARM_UP_MINUTES = 5


async def sample(admin: str, process: psutil.Process) -> tuple[float, int, float, int]:
    async with aiohttp.ClientSession() as session, session.get(admin + "/metrics") as response:
        text = await response.text()
    tasks = next(
        float(line.split()[-1]) for line in text.splitlines()
        if line.startswith("specwatch_asyncio_tasks ")
    )  # fmt: skip
    return process.memory_info().rss / 2**20, process.num_fds(), tasks, len(text.encode())


async def totals(admin: str) -> dict[str, float]:
    """Requests by variant, the shadow counters and the sidecar's own errors, from /metrics
    (an input left out of the analysis, a loop that failed, an evaluation or a reading that
    found the analysis changed under it: internal_errors; bad vLLM output: parse_errors)."""
    from prometheus_client.parser import text_string_to_metric_families

    async with aiohttp.ClientSession() as session, session.get(admin + "/metrics") as response:
        text = await response.text()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "specwatch_requests_total":
                key = f"requests {s.labels['variant']}"
            elif s.name in (
                "specwatch_shadow_comparisons_total",
                "specwatch_output_divergence_total",
                "specwatch_shadow_skipped_total",
                "specwatch_internal_errors_total",
                "specwatch_parse_errors_total",
            ):
                key = s.name.removeprefix("specwatch_").removesuffix("_total")
            else:
                continue
            out[key] = out.get(key, 0.0) + s.value
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--ab", action="store_true", help="A/B 10%% and the shadow check 20%%")
    args = parser.parse_args()
    sim_port, proxy_port, admin_port = free_port(), free_port(), free_port()
    base_port = free_port()
    ab_flags: list[str] = []
    env = {**os.environ, "SPECWATCH_LOG_LEVEL": "warning"}
    sim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "specwatch", "sim", "--port", str(sim_port), "--step-ms", "2",
        env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    base = None
    if args.ab:
        base = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "specwatch", "sim", "--port", str(base_port), "--step-ms", "2",
            "--num-spec-tokens", "0", env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        ab_flags = ["--baseline-upstream", f"http://127.0.0.1:{base_port}",
                    "--baseline-percent", "10", "--shadow-fraction", "0.2"]  # fmt: skip
    proxy = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "specwatch", "proxy", "--upstream", f"http://127.0.0.1:{sim_port}",
        "--port", str(proxy_port), "--admin-port", str(admin_port), *ab_flags, env=env,
    )  # fmt: skip
    admin = f"http://127.0.0.1:{admin_port}"
    try:
        await asyncio.sleep(3)
        load = asyncio.create_task(
            run_load(f"http://127.0.0.1:{proxy_port}", "sim-llama", seed=11,
                     concurrency=args.concurrency, duration=args.minutes * 60.0)
        )  # fmt: skip
        rows = []
        started = time.monotonic()
        print(f"{'minute':>6} {'RSS MiB':>9} {'fds':>5} {'tasks':>6} {'/metrics KiB':>13}")
        for minute in range(args.minutes + 1):
            await asyncio.sleep(max(0.0, minute * 60 - (time.monotonic() - started)))
            row = await sample(admin, psutil.Process(proxy.pid))
            rows.append(row)
            print(f"{minute:6d} {row[0]:9.1f} {row[1]:5d} {row[2]:6.0f} {row[3] / 1024:13.1f}",
                  flush=True)  # fmt: skip
        result = await load
        at_end = await totals(admin)
    finally:
        proxy.terminate()
        sim.terminate()
        await proxy.wait()
        await sim.wait()
        if base is not None:
            base.terminate()
            await base.wait()
    print(f"requests: {result.ok} served, {result.failed} failed")
    errors = {k: at_end.pop(k, 0.0) for k in ("internal_errors", "parse_errors")}
    print(f"the sidecar's own errors at the end: {errors}")
    if args.ab:
        print(f"A/B and shadow at the end: {at_end}")
    if len(rows) > WARM_UP_MINUTES + 1:
        first, last = rows[WARM_UP_MINUTES], rows[-1]
        for i, name in enumerate(("RSS", "open fds", "tasks", "/metrics size")):
            change = (last[i] - first[i]) / first[i] * 100 if first[i] else 0.0
            print(f"{name} from minute {WARM_UP_MINUTES} to the end: {change:+.1f}%")


if __name__ == "__main__":
    asyncio.run(main())
