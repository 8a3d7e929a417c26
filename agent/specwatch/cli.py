"""`specwatch serve | proxy | replay | sim | demo | check-config`.

Settings: flags over SPECWATCH_* over --config YAML over defaults (settings.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
from collections.abc import Coroutine, Sequence
from dataclasses import asdict as vars_of
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from specwatch import __version__
from specwatch.logs import configure
from specwatch.settings import ConfigError, Settings, load_settings

if TYPE_CHECKING:  # commands import what they need when they run: `--help` stays quick
    from specwatch.analysis.analyzer import Snapshot
    from specwatch.sources.cyclelog import LineError

log = structlog.get_logger("specwatch")

# flag dest -> path in the settings tree
_SETTING_FLAGS: dict[str, tuple[str, ...]] = {
    "host": ("host",),
    "admin_host": ("admin_host",),
    "port": ("port",),
    "admin_port": ("admin_port",),
    "upstream": ("upstream",),
    "ctx_buckets": ("ctx_buckets",),
    "task_header": ("tasks", "header"),
    "tasks": ("tasks", "allowlist"),
    "window": ("window", "length_seconds"),
    "zone_metric": ("zones", "metric"),
    "log_level": ("log_level",),
    "log_format": ("log_format",),
    "cycle_log": ("cycle_log", "path"),
    "vllm_log": ("vllm_log",),
    "state_dir": ("state_dir",),
    "scrape_interval": ("scrape_interval_seconds",),
    "drain_seconds": ("serve", "drain_seconds"),
    "baseline_upstream": ("ab", "baseline_upstream"),
    "baseline_percent": ("ab", "baseline_percent"),
    "ab_key_header": ("ab", "key_header"),
    "rollback_file": ("ab", "rollback_file"),
    "auto_rollback_seconds": ("ab", "auto_rollback_seconds"),
    "admin_token_file": ("ab", "admin_token_file"),
    "shadow_fraction": ("shadow", "fraction"),
}


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("settings (override SPECWATCH_* and --config)")
    group.add_argument("--config", type=Path, help="YAML settings file")
    group.add_argument("--host", help="bind address (default 127.0.0.1)")
    group.add_argument("--admin-host", help="bind address of the admin port (default: --host)")
    group.add_argument("--port", help="proxy port (default 8000)")
    group.add_argument("--admin-port", help="port of /metrics /status /healthz /readyz (9400)")
    group.add_argument("--upstream", help="vLLM base URL (default http://127.0.0.1:8001)")
    group.add_argument("--ctx-buckets", help="upper bounds, e.g. 512,2048,4096,8192,32768")
    group.add_argument("--task-header", help="request header naming the task (X-Task-Type)")
    group.add_argument("--tasks", help="task allowlist, comma-separated")
    group.add_argument("--window", help="window length in seconds (default 300)")
    group.add_argument("--zone-metric", help="alpha (default) or rate")
    group.add_argument("--log-level", help="debug | info | warning | error")
    group.add_argument("--log-format", help="console | json")
    group.add_argument("--cycle-log", help="append one JSON line per observed request to FILE")
    group.add_argument("--vllm-log", help="follow vLLM's log in FILE (vLLM in another container)")
    group.add_argument("--state-dir", help="keep drift baselines across restarts in DIR")
    group.add_argument("--scrape-interval", help="seconds between scrapes of vLLM (default 5)")
    group.add_argument("--drain-seconds", help="serve: how long vLLM may drain on stop (30)")
    ab = parser.add_argument_group("A/B rollout (settings `ab`)")
    ab.add_argument("--baseline-upstream", help="a vLLM without speculation, for A/B")
    ab.add_argument("--baseline-percent", help="sticky share of traffic to it, 0-100 (0)")
    ab.add_argument("--ab-key-header", help="stickiness key header (X-User-Id; else request id)")
    ab.add_argument("--rollback-file", help="while this file exists, all traffic -> baseline")
    ab.add_argument("--auto-rollback-seconds", help="roll back when a model is red this long (off)")
    ab.add_argument(
        "--admin-token-file", help="bearer token for POST /admin/* (needed off loopback)"
    )
    ab.add_argument(
        "--shadow-fraction", help="share of greedy requests also compared on the baseline (0)"
    )


def settings_from(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for dest, path in _SETTING_FLAGS.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        node = overrides
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return load_settings(getattr(args, "config", None), **overrides)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specwatch",
        description="Monitoring sidecar and SLO alerting for speculative decoding on vLLM.",
    )
    parser.add_argument("--version", action="version", version=f"specwatch {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="start vLLM as a child and proxy it: specwatch serve [options] -- vllm serve ...",
        usage="specwatch serve [options] -- VLLM_COMMAND ...",
    )
    _add_setting_flags(serve)

    proxy = commands.add_parser("proxy", help="reverse proxy in front of a running vLLM")
    _add_setting_flags(proxy)

    replay = commands.add_parser("replay", help="analyse cycle logs as the live sidecar would")
    replay.add_argument("files", nargs="+", type=Path, help="cycle log files (JSON lines, v1)")
    replay.add_argument("--json", action="store_true", help="print the /status document")
    _add_setting_flags(replay)

    check = commands.add_parser("check-config", help="validate settings and print them")
    _add_setting_flags(check)

    generate = commands.add_parser(
        "generate", help="write the Prometheus rules, Alertmanager config and runbooks"
    )
    generate.add_argument("--out", type=Path, default=Path(), help="repository root (default .)")
    generate.add_argument(
        "--check", action="store_true", help="compare with the files under --out; write nothing"
    )
    generate.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="divide every window and `for:` by N (live tests, demos); default: production",
    )
    _add_setting_flags(generate)

    advise_cmd = commands.add_parser(
        "advise", help="best draft length K from recorded traffic (cycle logs)"
    )
    advise_cmd.add_argument(
        "--cycle-log", dest="files", nargs="+", type=Path, required=True, help="cycle log files"
    )
    advise_cmd.add_argument(
        "--cost-ratio", type=float, required=True, help="c: draft step cost / target step cost"
    )
    advise_cmd.add_argument("--json", action="store_true", help="print JSON")
    advise_cmd.add_argument("--config", type=Path, help="YAML settings file")
    advise_cmd.add_argument("--ctx-buckets", help="upper bounds, e.g. 512,2048,4096,8192,32768")

    snap = commands.add_parser(
        "snapshot", help="the overview's key panels as a PNG, from Prometheus"
    )
    snap.add_argument("--prometheus", required=True, help="Prometheus base URL")
    snap.add_argument("--out", type=Path, required=True, help="PNG file to write")
    snap.add_argument("--model", default=".*", help="model (regex, default all)")
    snap.add_argument("--minutes", type=float, default=60.0, help="time range (60)")
    snap.add_argument("--config", type=Path, help="YAML settings file (zone thresholds)")

    sim = commands.add_parser("sim", help="run the simulated vLLM speculative server")
    sim.add_argument("--host", default="127.0.0.1")
    sim.add_argument("--port", type=int, default=8001)
    sim.add_argument("--model", "--served-model-name", dest="model", default="sim-llama")
    sim.add_argument("--num-spec-tokens", type=int, default=4)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument(
        "--per-request-spec-decode-metrics",
        "--spec-metrics",
        dest="spec_metrics",
        choices=("detailed", "summary", "none"),
        default="detailed",
        help="like vLLM's flag (but on by default)",
    )
    sim.add_argument("--enable-per-request-metrics", action="store_true", help="accepted, as vLLM")
    sim.add_argument("--enable-request-id-headers", action="store_true", help="accepted, as vLLM")
    sim.add_argument(
        "--log-stats-interval",
        type=float,
        default=float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10")),
        help="seconds between vLLM-style stats lines on stdout (VLLM_LOG_STATS_INTERVAL)",
    )
    sim.add_argument("--step-ms", type=float, default=4.0, help="target step time")
    sim.add_argument("--draft-cost", type=float, default=0.05, help="draft/target step cost c")
    sim.add_argument("--no-sleep", action="store_true", help="answer without simulated latency")
    sim.add_argument("--drop-after", type=float, help="seconds after start of an acceptance drop")
    sim.add_argument("--drop-factor", type=float, default=0.7)
    sim.add_argument("--drop-task", help="the task the drop hits (default: all)")
    sim.add_argument(
        "--request-icc",
        type=float,
        default=None,
        help="between-request variance of acceptance / m (1 - m) (default: calibrated, 0.17)",
    )

    from specwatch.bench.options import add_parser as add_bench

    add_bench(commands)

    demo = commands.add_parser("demo", help="simulator + proxy + mixed workload, live table")
    demo.add_argument("--duration", type=float, default=45.0, help="seconds of load (45)")
    demo.add_argument("--seed", type=int, default=7)
    demo.add_argument("--concurrency", type=int, default=16)
    demo.add_argument("--port", type=int, default=0, help="proxy port (default: any free)")
    demo.add_argument("--admin-port", type=int, default=0, help="admin port (default: any free)")
    demo.add_argument(
        "--keep-running", action="store_true", help="keep serving after the summary (Ctrl-C)"
    )
    return parser


async def _serve_forever(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def _run_proxy(settings: Settings) -> int:
    from specwatch.runtime import Sidecar

    sidecar = Sidecar(settings)
    await sidecar.start()
    try:
        await _serve_forever(asyncio.Event())
        await sidecar.drain(settings.serve.drain_seconds)
    finally:
        await sidecar.stop()
    return 0


async def _run_sim(args: argparse.Namespace) -> int:
    from aiohttp import web

    from specwatch.sim.acceptance import REQUEST_ICC, AcceptanceModel, CostModel, Drop
    from specwatch.sim.server import SimConfig, SimServer

    request_icc = REQUEST_ICC if args.request_icc is None else args.request_icc
    drops = (
        ()
        if args.drop_after is None
        else (Drop(args.drop_after, args.drop_factor, args.drop_task),)
    )
    config = SimConfig(
        model=args.model,
        num_spec_tokens=args.num_spec_tokens,
        seed=args.seed,
        spec_metrics=args.spec_metrics,
        acceptance=AcceptanceModel(drops=drops, request_icc=request_icc),
        cost=CostModel(target_step_ms=args.step_ms, draft_cost_ratio=args.draft_cost),
        sleep=not args.no_sleep,
    )
    server = SimServer(config)
    runner = web.AppRunner(server.app(), handler_cancellation=True, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, args.host, args.port).start()
    print(f"specwatch sim: {config.model} (K={config.num_spec_tokens}) on {runner.addresses}")
    stats = asyncio.create_task(server.log_stats(args.log_stats_interval, _print_line))
    try:
        await _serve_forever(asyncio.Event())
    finally:
        stats.cancel()
        await runner.cleanup()
    return 0


def _print_line(line: str) -> None:
    print(line, flush=True)


async def _run_serve(settings: Settings, vllm_argv: list[str]) -> int:
    from specwatch.runtime import Sidecar
    from specwatch.sources.supervisor import VllmProcess, prepare_command

    command = prepare_command(vllm_argv)
    print(f"specwatch: starting vLLM: {shlex.join(command.argv)}", file=sys.stderr)
    if command.added:
        print(f"specwatch: added to the vLLM command: {shlex.join(command.added)}", file=sys.stderr)
    settings = settings.model_copy(update={"upstream": command.upstream})
    sidecar = Sidecar(settings, fresh_engine=True)
    child = VllmProcess(command, sidecar.log_line)
    await child.start()
    try:
        await sidecar.start()
    except OSError:
        await child.stop(settings.serve.drain_seconds)
        raise
    received: list[int] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(number: int) -> None:
        received.append(number)
        stop.set()

    for handled in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(handled, on_signal, int(handled))
    exited = asyncio.create_task(child.wait())
    stopping = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if exited in done:
        code = exited.result()
        stopping.cancel()
        sidecar.health.upstream_up = False
        log.error("vllm_exited", code=code, grace_seconds=settings.serve.exit_grace_seconds)
        await asyncio.sleep(settings.serve.exit_grace_seconds)  # let Prometheus see it
    else:
        number = received[0]
        await sidecar.drain(settings.serve.drain_seconds)  # streams finish while vLLM serves
        log.info("stopping_vllm", signal=signal.Signals(number).name)
        code = await child.stop(settings.serve.drain_seconds, number)
        if code == 128 + number:  # ended by the signal we passed on: a clean stop
            code = 0
    await sidecar.stop()
    return code


def _run_generate(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.gen.alerts import GenerateError
    from specwatch.gen.writer import render, stale, write

    try:
        files = render(settings, args.time_scale)
    except GenerateError as error:
        print(f"specwatch: generate: {error}", file=sys.stderr)
        return 2
    if args.check:
        outdated = stale(files, args.out)
        for name in outdated:
            print(f"specwatch: generate: {name} is out of date", file=sys.stderr)
        if outdated:
            print(
                "specwatch: generate: run `specwatch generate` and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"specwatch: generate: {len(files)} files up to date", file=sys.stderr)
        return 0
    for path in write(files, args.out):
        print(f"specwatch: generate: wrote {path}", file=sys.stderr)
    return 0


def _replayed(
    files: list[Path], settings: Settings, command: str
) -> tuple[Snapshot, list[LineError]] | None:
    """Cycle logs through the live analysis; None (said on stderr) when a file is unreadable."""
    from specwatch.analysis.replay import replay
    from specwatch.sources.cyclelog import read_cycle_logs

    errors: list[LineError] = []
    try:
        analyzer, end = replay(read_cycle_logs(files, errors), settings)
    except OSError as error:
        print(f"specwatch: {command}: {error}", file=sys.stderr)
        return None
    return analyzer.snapshot(end), errors


def _run_advise(args: argparse.Namespace, settings: Settings) -> int:
    import orjson
    from rich.console import Console
    from rich.table import Table

    from specwatch.analysis.advisor import advise
    from specwatch.analysis.stats import SliceStats

    if not 0 <= args.cost_ratio < 1:
        print("specwatch: advise: --cost-ratio must be in [0, 1)", file=sys.stderr)
        return 2
    replayed = _replayed(args.files, settings, "advise")
    if replayed is None:
        return 1
    snapshot, errors = replayed
    results = []
    for view in (*snapshot.rollups, *snapshot.slices):
        counts = view.since_start
        stats = SliceStats.of(counts, settings.zones.confidence)
        advice = advise(stats.per_position, counts.max_drafted, args.cost_ratio)
        if advice is not None:
            results.append((view.key, counts.steps, advice))
    if args.json:
        document = [
            {"model": key.model, "ctx_bucket": key.ctx_bucket, "task": key.task,
             "spec_steps": steps, **vars_of(advice)}
            for key, steps, advice in results
        ]  # fmt: skip
        sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        console = Console()
        for key, steps, advice in results:
            if key.ctx_bucket != "all":
                continue
            table = Table(title=f"{key.model}: {steps} steps, c = {args.cost_ratio:g}")
            for name in ("K", "tokens/step", "predicted speedup", ""):
                table.add_column(name, justify="right")
            low, high = advice.range
            for k, expected, speedup in advice.table:
                mark = "best" if k == advice.best_k else ("in range" if low <= k <= high else "")
                table.add_row(str(k), f"{expected:.3f}", f"{speedup:.3f}", mark)
            console.print(table)
            console.print(f"advice: K={advice.best_k} (range {low}-{high}); {advice.note}")
        console.print("per slice (best K, range):")
        for key, steps, advice in results:
            if key.ctx_bucket != "all":
                low, high = advice.range
                console.print(
                    f"  {key.ctx_bucket:>8} {key.task:<14} K={advice.best_k} ({low}-{high}), "
                    f"{steps} steps"
                )
    for bad in errors:
        print(f"specwatch: advise: {bad.path}:{bad.line}: {bad.reason}", file=sys.stderr)
    return 0


def _run_replay(args: argparse.Namespace, settings: Settings) -> int:
    import orjson
    from rich.console import Console

    from specwatch.export.status import status_document
    from specwatch.table import slice_table

    replayed = _replayed(args.files, settings, "replay")
    if replayed is None:
        return 1
    snapshot, errors = replayed
    if args.json:
        document = status_document(snapshot, None)
        document["replay"] = {
            "files": [str(path) for path in args.files],
            "bad_lines": [vars_of(bad) for bad in errors],
        }
        sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        Console().print(slice_table(snapshot, f"replay of {len(args.files)} file(s)"))
    for bad in errors:
        print(f"specwatch: replay: {bad.path}:{bad.line}: {bad.reason}", file=sys.stderr)
    if errors:
        print(f"specwatch: replay: {len(errors)} bad line(s) skipped", file=sys.stderr)
    return 0


def run_loop(coroutine: Coroutine[Any, Any, int]) -> int:
    """Run on uvloop where it is installed (Linux, macOS): a faster loop for the proxy path."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - e.g. Windows
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    vllm_argv: list[str] = []
    if "--" in argv:  # everything after `--` is the vLLM command of `serve`
        at = argv.index("--")
        argv, vllm_argv = argv[:at], argv[at + 1 :]
    args = _parser().parse_args(argv)
    args.argv = [*argv, *(["--", *vllm_argv] if vllm_argv else [])]
    try:
        if args.command == "sim":
            configure("info", "console")
            return run_loop(_run_sim(args))
        if args.command == "bench":
            from specwatch.bench.command import run as run_bench

            configure("warning", "console")
            return run_bench(args, vllm_argv)
        if args.command == "demo":
            from specwatch.demo import run_demo

            return run_loop(run_demo(args))
        settings = settings_from(args)
    except ConfigError as error:
        for line in error.lines:
            print(f"specwatch: config: {line}", file=sys.stderr)
        return 2
    configure(settings.log_level, settings.log_format)
    if args.command == "check-config":
        print(json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True))
        print("specwatch: config ok", file=sys.stderr)
        return 0
    if args.command == "replay":
        return _run_replay(args, settings)
    if args.command == "generate":
        return _run_generate(args, settings)
    if args.command == "advise":
        return _run_advise(args, settings)
    if args.command == "snapshot":
        from specwatch.snapshot import SnapshotError, render_snapshot

        try:
            path = render_snapshot(args.prometheus, args.out, settings, args.model, args.minutes)
        except SnapshotError as error:
            print(f"specwatch: snapshot: {error}", file=sys.stderr)
            return 1
        print(f"specwatch: snapshot: wrote {path}", file=sys.stderr)
        return 0
    try:
        if args.command == "serve":
            if not vllm_argv:
                print("specwatch: serve needs a vLLM command after --", file=sys.stderr)
                return 2
            return run_loop(_run_serve(settings, vllm_argv))
        return run_loop(_run_proxy(settings))
    except (OSError, ValueError) as error:  # e.g. the port is taken, an empty token file
        print(f"specwatch: {error}", file=sys.stderr)
        return 1
