"""`specwatch bench`: measure speculation against a baseline on your own workload, and report.

    specwatch bench --url URL                              one endpoint, figures only
    specwatch bench --baseline URL --spec URL [--spec NAME=URL ...]   interleaved comparison
    specwatch bench --sweep-k 3,5,7 -- VLLM_COMMAND        start baseline and each K in turn
    ... --sweep-concurrency 1,4,16                         each target at each concurrency

Ctrl-C stops sending, waits for nothing, and writes a partial report of what finished.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import signal
import sys
import time
from collections.abc import Coroutine
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from specwatch import __version__
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.bench import report
from specwatch.bench.concurrency import recommend, surface
from specwatch.bench.plan import Plan, UsageError, plan_of
from specwatch.bench.results import BASELINE, Analysis, analyse, cost, quality
from specwatch.bench.runner import Load, Target, TargetRun, run_targets, wait_ready
from specwatch.bench.sweep import SweepError, baseline_command, command_for_k
from specwatch.bench.workload import (
    BenchRequest,
    DatasetError,
)
from specwatch.core.loop import run_loop
from specwatch.settings import Settings


def _progress(total: int, enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=False,
    )


def _open_log(folder: Path, name: str) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    return (folder / f"{name.replace('=', '')}.log").open("w")


async def _at_levels(
    targets: list[Target],
    requests: list[BenchRequest],
    warmup: list[BenchRequest],
    load: Load,
    runs: dict[int, list[TargetRun]],
    tick: Any,
    quality_for: Any,
) -> None:
    """The targets at each concurrency in turn (the first level also runs the quality check)."""
    for i, level in enumerate(runs):
        at_level = replace(load, concurrency=level)
        quality = quality_for if i == 0 else _no_quality
        await run_targets(targets, requests, at_level, tick, runs[level], warmup, quality)


def _no_quality(_name: str) -> tuple[()]:
    return ()


async def _sweep(
    ks: list[int],
    vllm_argv: list[str],
    requests: list[BenchRequest],
    warmup: list[BenchRequest],
    load: Load,
    runs: dict[int, list[TargetRun]],
    tick: Any,
    ready_timeout: float,
    log_dir: Path,
    quality_for: Any,
) -> None:
    from specwatch.upstream.child import VllmProcess, prepare_command

    plan = [(BASELINE, baseline_command(vllm_argv))]
    plan += [(f"K={k}", command_for_k(vllm_argv, k)) for k in ks]
    for name, argv in plan:
        command = prepare_command(argv)
        server_log = _open_log(log_dir, name)
        child = VllmProcess(command, server_log.write, echo=False)
        print(f"specwatch bench: starting {name}: {shlex.join(command.argv)}", file=sys.stderr)
        await child.start()
        try:
            await wait_ready(command.upstream, ready_timeout, child.running)
            target = Target(name, command.upstream)
            await _at_levels([target], requests, warmup, load, runs, tick, quality_for)
        finally:
            await child.stop(30.0)
            server_log.close()


def _render(results: Path, out: Path) -> int:
    try:
        document = orjson.loads(results.read_bytes())
        written = report.write(document, out)
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as error:
        print(f"specwatch bench: cannot render {results}: {error!r}", file=sys.stderr)
        return 1
    print(f"specwatch bench: wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


async def _measure(
    plan: Plan, args: argparse.Namespace, vllm_argv: list[str]
) -> tuple[dict[int, list[TargetRun]], bool]:
    """Every level's runs, and whether the run stopped early (a signal, a failure)."""
    n_targets = len(plan.targets) or len(plan.ks) + 1
    extra = args.quality_prompts * args.quality_samples if args.quality_temperature else 0
    by_level: dict[int, list[TargetRun]] = {level: [] for level in plan.levels}
    partial = False
    total = (len(plan.requests) * len(plan.levels) + extra) * n_targets
    with _progress(total, not args.no_progress) as progress:
        task = progress.add_task("bench", total=total)

        def tick() -> None:
            progress.advance(task)

        job: Coroutine[Any, Any, object]
        if plan.ks:
            job = _sweep(
                plan.ks,
                vllm_argv,
                plan.requests,
                plan.warmup,
                plan.load,
                by_level,
                tick,
                args.ready_timeout,
                args.out / "servers",
                plan.quality_for,
            )
        else:
            job = _at_levels(
                plan.targets,
                plan.requests,
                plan.warmup,
                plan.load,
                by_level,
                tick,
                plan.quality_for,
            )
        main = asyncio.ensure_future(job)
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, main.cancel)
            loop.add_signal_handler(signal.SIGTERM, main.cancel)
        try:
            await main
        except asyncio.CancelledError:
            partial = True
        except (aiohttp.ClientError, OSError, RuntimeError, TimeoutError, ValueError) as error:
            partial = True
            print(f"specwatch bench: stopped: {error}", file=sys.stderr)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError):
                    loop.remove_signal_handler(sig)
    return by_level, partial


async def _run(args: argparse.Namespace, settings: Settings, vllm_argv: list[str]) -> int:
    if args.render:
        return _render(args.render, args.out)
    console = Console(stderr=True)
    try:
        plan = plan_of(args, settings, vllm_argv)
    except (UsageError, SweepError, DatasetError) as error:
        print(f"specwatch bench: {error}", file=sys.stderr)
        return 2
    started = time.time()
    by_level, partial = await _measure(plan, args, vllm_argv)
    runs = by_level[plan.levels[0]]  # the report's tables; the surface covers every level
    if not any(run.samples for run in runs):
        print("specwatch bench: no request finished; no report", file=sys.stderr)
        return 1
    analysis = Analysis(confidence=args.confidence, bootstrap=args.bootstrap, seed=args.seed)
    documents = analyse(runs, CtxBuckets(settings.ctx_buckets), analysis)
    load = plan.load
    load_text = (
        f"Poisson arrivals at {load.rate:g} req/s"
        if load.rate
        else f"concurrency {load.concurrency}"
    )
    verdict = report.verdict(documents)
    checks = quality(
        runs, load.temperature, args.quality_alpha, args.quality_permutations, args.seed
    )
    document = {
        "meta": {
            "version": __version__,
            "command": "specwatch " + shlex.join(args.argv) if args.argv else "",
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "partial": partial,
            "requests": len(plan.requests),
            "warmup_requests": len(plan.warmup),
            "workload": plan.workload,
            "max_tokens": args.max_tokens,
            "load": asdict(load),
            "load_description": load_text
            + (", sequential servers" if plan.ks else ", interleaved"),
            "ctx_buckets": list(settings.ctx_buckets),
            "analysis": asdict(analysis),
        },
        "targets": documents,
        "verdict": verdict,
        "quality": checks,
        "cost": cost(documents, plan.prices, args.accelerators),
    }
    if args.sweep_concurrency:
        document["sweep"] = _surface(by_level, verdict, settings, analysis)
    written = [*report.write(document, args.out), report.write_samples(runs, args.out)]
    for line in [*report.plain_verdict(verdict, args.confidence), *report.quality_lines(checks)]:
        console.print(line, markup=False, highlight=False)
    console.print(f"specwatch bench: wrote {', '.join(str(p) for p in written)}", markup=False)
    return 130 if partial else 0


def _surface(
    by_level: dict[int, list[TargetRun]],
    first: dict[str, Any],
    settings: Settings,
    analysis: Analysis,
) -> dict[str, Any]:
    """The surface over every level; the first level's verdict is the report's (`first`),
    the others are analysed here."""
    buckets = CtxBuckets(settings.ctx_buckets)
    verdicts = [
        (level, first if i == 0 else report.verdict(analyse(runs, buckets, analysis)))
        for i, (level, runs) in enumerate(by_level.items())
        if any(run.samples for run in runs)
    ]
    cells = surface(verdicts)
    levels = [level for level, _ in verdicts]
    return {"concurrency": levels, "surface": cells, "recommended": recommend(cells, levels)}


def run(args: argparse.Namespace, settings: Settings) -> int:
    return run_loop(_run(args, settings, args.vllm_argv))
