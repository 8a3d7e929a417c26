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
from specwatch.analysis.slicing import CtxBuckets
from specwatch.bench import report
from specwatch.bench.concurrency import parse_levels, recommend, surface
from specwatch.bench.results import BASELINE, Analysis, analyse, cost, quality
from specwatch.bench.runner import Load, Target, TargetRun, run_targets, wait_ready
from specwatch.bench.sweep import SweepError, baseline_command, command_for_k, parse_ks
from specwatch.bench.workload import (
    BenchRequest,
    DatasetError,
    builtin,
    quality_requests,
    sharegpt,
)
from specwatch.commands.loop import run_loop
from specwatch.settings import Settings


class UsageError(Exception):
    pass


def _targets(args: argparse.Namespace) -> list[Target]:
    given = [bool(args.url), bool(args.baseline or args.spec), bool(args.sweep_k)]
    if sum(given) != 1:
        raise UsageError("give exactly one of --url, --baseline/--spec, --sweep-k")
    if args.url:
        return [Target("target", args.url.rstrip("/"), args.model)]
    if args.baseline or args.spec:
        if not (args.baseline and args.spec):
            raise UsageError("--baseline and --spec go together")
        targets = [Target(BASELINE, args.baseline.rstrip("/"), args.model)]
        for i, given_spec in enumerate(args.spec):
            name, url = _named(given_spec)
            name = name or ("spec" if i == 0 else f"spec{i + 1}")
            if name in {t.name for t in targets}:
                raise UsageError(f"two targets named {name!r}")
            targets.append(Target(name, url.rstrip("/"), args.model))
        return targets
    return []


def _prices(given: list[str]) -> dict[str, float]:
    """`--price-per-hour 2.5` (every target) or `--price-per-hour K=3=2.5` (one target)."""
    out: dict[str, float] = {}
    for item in given:
        name, _, value = item.rpartition("=")
        try:
            price = float(value)
        except ValueError:
            raise UsageError(f"--price-per-hour: not a price: {item!r}") from None
        if price < 0:
            raise UsageError(f"--price-per-hour: negative price: {item!r}")
        out[name or "*"] = price
    return out


def _named(given: str) -> tuple[str, str]:
    """`NAME=URL` or `URL`."""
    name, sep, url = given.partition("=")
    if sep and "://" not in name:
        return name, url
    return "", given


def _workload(args: argparse.Namespace, tasks: Any) -> tuple[list[BenchRequest], str]:
    if args.requests < 1:
        raise UsageError("--requests must be at least 1")
    if args.dataset:
        requests, skipped = sharegpt(
            args.dataset, args.requests, seed=args.seed, max_tokens=args.max_tokens, tasks=tasks
        )
        note = f", {skipped} entries without a prompt skipped" if skipped else ""
        return requests, f"ShareGPT file {args.dataset.name}{note}"
    requests = builtin(
        args.requests,
        seed=args.seed,
        max_tokens=args.max_tokens,
        min_prompt_words=args.min_prompt_words,
        max_prompt_words=args.max_prompt_words,
    )
    words = f"{args.min_prompt_words}-{args.max_prompt_words}"
    return requests, f"built-in mix, seed {args.seed}, prompts {words} words"


def _quality_plan(
    args: argparse.Namespace, requests: list[BenchRequest], has_baseline: bool
) -> Any:
    """Each target's distribution-check requests: the first prompts, seeded samples; the
    baseline's seeds and every other target's do not overlap, so all are independent draws."""
    if args.quality_temperature is None:
        return lambda _name: ()
    if not has_baseline:
        raise UsageError("--quality-temperature needs a baseline (--baseline or --sweep-k)")
    if args.quality_temperature <= 0:
        raise UsageError("--quality-temperature must be above 0 (temperature 0 is checked anyway)")
    if args.quality_samples < 2 or args.quality_prompts < 1:
        raise UsageError("--quality-samples must be at least 2, --quality-prompts at least 1")
    prompts = requests[: args.quality_prompts]
    samples, temperature = args.quality_samples, args.quality_temperature

    def plan(name: str) -> list[BenchRequest]:
        first = 0 if name == BASELINE else samples
        return quality_requests(prompts, samples, temperature, first)

    return plan


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
    from specwatch.vllm.child import VllmProcess, prepare_command

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


async def _run(args: argparse.Namespace, settings: Settings, vllm_argv: list[str]) -> int:
    if args.render:
        return _render(args.render, args.out)
    console = Console(stderr=True)
    try:
        targets = _targets(args)
        ks = parse_ks(args.sweep_k) if args.sweep_k else []
        if ks and not vllm_argv:
            raise UsageError("--sweep-k needs the vLLM command after --")
        if ks:
            command_for_k(vllm_argv, ks[0])  # fail now on a command without a spec config
        requests, workload = _workload(args, settings.tasks)
        prices = _prices(args.price_per_hour)
        if args.accelerators < 1:
            raise UsageError("--accelerators must be at least 1")
        quality_for = _quality_plan(args, requests, bool(ks) or bool(args.baseline))
        levels = (
            parse_levels(args.sweep_concurrency) if args.sweep_concurrency else [args.concurrency]
        )
        if args.sweep_concurrency and args.rate:
            raise UsageError("--sweep-concurrency sets the concurrency: not with --rate")
    except (UsageError, SweepError, DatasetError) as error:
        print(f"specwatch bench: {error}", file=sys.stderr)
        return 2
    load = Load(
        concurrency=levels[0],
        rate=args.rate,
        temperature=args.temperature,
        seed=args.sampling_seed,
        timeout=args.timeout,
        block=args.block,
        token_ids=not args.no_token_ids,
    )
    # Warm-up: other prompts from the same mix (a different seed), so no measured request is
    # answered from a cache the warm-up filled.
    count = args.concurrency if args.warmup < 0 else args.warmup
    warmup = builtin(
        count,
        seed=args.seed + 1_000_003,
        max_tokens=args.max_tokens,
        min_prompt_words=args.min_prompt_words,
        max_prompt_words=args.max_prompt_words,
    )
    n_targets = len(targets) or len(ks) + 1
    extra = args.quality_prompts * args.quality_samples if args.quality_temperature else 0
    by_level: dict[int, list[TargetRun]] = {level: [] for level in levels}
    runs = by_level[levels[0]]  # the report's tables; the surface covers every level
    started = time.time()
    partial = False
    total = (len(requests) * len(levels) + extra) * n_targets
    with _progress(total, not args.no_progress) as progress:
        task = progress.add_task("bench", total=total)

        def tick() -> None:
            progress.advance(task)

        job: Coroutine[Any, Any, object]
        if ks:
            job = _sweep(
                ks,
                vllm_argv,
                requests,
                warmup,
                load,
                by_level,
                tick,
                args.ready_timeout,
                args.out / "servers",
                quality_for,
            )
        else:
            job = _at_levels(targets, requests, warmup, load, by_level, tick, quality_for)
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
    if not any(run.samples for run in runs):
        print("specwatch bench: no request finished; no report", file=sys.stderr)
        return 1
    analysis = Analysis(confidence=args.confidence, bootstrap=args.bootstrap, seed=args.seed)
    documents = analyse(runs, CtxBuckets(settings.ctx_buckets), analysis)
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
            "requests": len(requests),
            "warmup_requests": len(warmup),
            "workload": workload,
            "max_tokens": args.max_tokens,
            "load": asdict(load),
            "load_description": load_text + (", sequential servers" if ks else ", interleaved"),
            "ctx_buckets": list(settings.ctx_buckets),
            "analysis": asdict(analysis),
        },
        "targets": documents,
        "verdict": verdict,
        "quality": checks,
        "cost": cost(documents, prices, args.accelerators),
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


def run(args: argparse.Namespace, settings: Settings, vllm_argv: list[str]) -> int:
    return run_loop(_run(args, settings, vllm_argv))
