"""`specwatch demo`: simulator + sidecar + mixed workload in one process, with a live table.

The demo runs the production code paths on a shortened time scale (a one-minute window, short
dwell) so zones settle within its duration; everything else is the default configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from typing import Any

from aiohttp import web
from rich.console import Console
from rich.live import Live

from specwatch.analysis.analyzer import Snapshot
from specwatch.commands.shared.table import ZONE_STYLE, slice_table
from specwatch.commands.shared.table import console as terminal
from specwatch.conventions import VLLM_NUM_DRAFT_TOKENS, VLLM_NUM_DRAFTS
from specwatch.core.logs import configure
from specwatch.core.loop import run_command
from specwatch.settings import Settings, load_settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import AcceptanceModel, Drop
from specwatch.sim.causes import CONFIGURED, with_cause
from specwatch.sim.server import SimConfig, SimServer
from specwatch.sim.workload import run_load


def demo_settings(port: int, admin_port: int) -> Settings:
    """The demo's settings: production code paths on a shortened time scale."""
    return load_settings(
        port=port,
        admin_port=admin_port,
        log_level="warning",
        window={"length_seconds": 60.0, "bucket_seconds": 2.0},
        zones={"min_dwell_seconds": 5.0, "evaluation_interval_seconds": 1.0},
        # drift on 1-second buckets, a second standing for a minute: a baseline of 12 s ending
        # 6 s back in place of 6 h / 30 min, and the target of one false alarm a slice-week
        # on that scale (10,080 buckets, h = 7.4, as production's). A shorter gap lets the drop
        # into the baseline within seconds; a week of real seconds (h = 11.45) is too strict
        # for buckets of a few requests to show the drop within the demo
        drift={
            "bucket_seconds": 1.0,
            "baseline_buckets": 12,
            "gap_buckets": 6,
            "min_baseline_buckets": 8,
            "recent_buckets": 10,
            "false_alarms_per_week": 60.0,
        },
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    return run_command("demo", demo(args, settings))


async def demo(args: argparse.Namespace, settings: Settings, console: Console | None = None) -> int:
    configure("warning", "console")
    console = console or terminal()  # piped: no wrapping, no cut cells
    # Translation is red, chat yellow, code green at short context; halfway through, the
    # summarization draft gets worse: watch its slices leave green.
    acceptance = AcceptanceModel(
        drops=(Drop(after=args.duration / 2, factor=0.5, task="summarization"),)
    )
    cause = getattr(args, "cause", None)  # one cause of poor acceptance, on request
    config = SimConfig(seed=args.seed, acceptance=acceptance, engine=args.engine)
    sim = SimServer(with_cause(config, cause))
    sim_runner = web.AppRunner(sim.app(), handler_cancellation=True, access_log=None)
    await sim_runner.setup()
    await web.TCPSite(sim_runner, "127.0.0.1", 0).start()
    sim_url = f"http://127.0.0.1:{sim_runner.addresses[0][1]}"
    update: dict[str, Any] = {"upstream": sim_url}
    if cause in CONFIGURED:  # the verifier and the schedule are the config's
        update["speculative_config"] = json.dumps(CONFIGURED[cause])
    sidecar = Sidecar(settings.model_copy(update=update))
    ports = await sidecar.start()
    proxy_url = f"http://127.0.0.1:{ports.proxy}"
    admin_url = f"http://127.0.0.1:{ports.admin}"
    console.print(
        f"[bold]specwatch demo[/]: simulated vLLM at {sim_url}, proxy at {proxy_url}, "
        f"admin at {admin_url}; {args.duration:.0f} s of mixed load, seed {args.seed}"
    )
    started = time.monotonic()
    sim.restart_clock()
    load = asyncio.create_task(
        run_load(
            proxy_url,
            sim.config.model,
            seed=args.seed,
            concurrency=args.concurrency,
            duration=args.duration,
        )
    )
    try:
        with Live(console=console, refresh_per_second=2, transient=False) as live:
            while not load.done():
                elapsed = time.monotonic() - started
                snapshot = (await sidecar.reading()).snapshot
                live.update(slice_table(snapshot, f"window of the last 60 s — t={elapsed:4.0f} s"))
                await asyncio.sleep(0.5)
            result = await load
            await sidecar.drained()
            await sidecar.evaluate_now()
            snapshot = (await sidecar.reading()).snapshot
            live.update(slice_table(snapshot, "final window"))
        _summary(console, snapshot, result.ok, result.failed, sim, admin_url)
        if args.keep_running:
            console.print("serving until Ctrl-C ...")
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
    finally:
        load.cancel()
        await sidecar.stop()
        await sim_runner.cleanup()
    return 0


def _summary(
    console: Console, snapshot: Snapshot, ok: int, failed: int, sim: SimServer, admin_url: str
) -> None:
    zones: dict[str, int] = {}
    for view in snapshot.slices:
        zones[view.zone] = zones.get(view.zone, 0) + 1
    # steps where the engine's data has them; draft tokens where it sends totals (llama.cpp)
    what, ours, theirs = "speculative steps", "steps", VLLM_NUM_DRAFTS
    if sim.config.engine == "llamacpp":
        what, ours, theirs = "draft tokens", "drafted", VLLM_NUM_DRAFT_TOKENS
    seen = sum(getattr(view.since_start, ours) for view in snapshot.slices)
    console.print(
        f"\n[bold]summary[/]: {ok} requests served ({failed} failed); slices by zone: "
        + ", ".join(f"[{ZONE_STYLE[z]}]{z}[/] {n}" for z, n in sorted(zones.items()))
    )
    console.print(
        f"reconciliation: {seen} {what} seen by specwatch, "
        f"{int(sim.metrics.total(theirs))} counted by the simulator"
    )
    alarmed = [
        f"{view.key.task} at {view.key.ctx_bucket}"
        for view in snapshot.slices
        if view.drift is not None and view.drift.alarms_raised
    ]
    console.print(
        "drift alarms raised: "
        + (", ".join(alarmed) if alarmed else "none")
        + " (the simulated summarization draft got worse halfway)"
    )
    causes: dict[str, list[str]] = {}
    for view in (*snapshot.rollups, *snapshot.slices):
        for found in view.causes:
            causes.setdefault(found.kind, []).append(f"{view.key.task} at {view.key.ctx_bucket}")
    console.print(
        "causes found: "
        + ("; ".join(f"{kind} ({len(where)} slices)" for kind, where in causes.items()) or "none")
    )
    console.print(f"metrics: {admin_url}/metrics   status: {admin_url}/status")
