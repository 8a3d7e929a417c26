"""`specwatch proxy | sim | demo | check-config`: flags over SPECWATCH_* over --config YAML."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from specwatch import __version__
from specwatch.logs import configure
from specwatch.settings import ConfigError, Settings, load_settings

# flag dest -> path in the settings tree
_SETTING_FLAGS: dict[str, tuple[str, ...]] = {
    "host": ("host",),
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
}


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("settings (override SPECWATCH_* and --config)")
    group.add_argument("--config", type=Path, help="YAML settings file")
    group.add_argument("--host", help="bind address (default 127.0.0.1)")
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

    proxy = commands.add_parser("proxy", help="reverse proxy in front of a running vLLM")
    _add_setting_flags(proxy)

    check = commands.add_parser("check-config", help="validate settings and print them")
    _add_setting_flags(check)

    sim = commands.add_parser("sim", help="run the simulated vLLM speculative server")
    sim.add_argument("--host", default="127.0.0.1")
    sim.add_argument("--port", type=int, default=8001)
    sim.add_argument("--model", default="sim-llama")
    sim.add_argument("--num-spec-tokens", type=int, default=4)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--spec-metrics", choices=("detailed", "summary", "none"), default="detailed")
    sim.add_argument("--step-ms", type=float, default=4.0, help="target step time")
    sim.add_argument("--draft-cost", type=float, default=0.05, help="draft/target step cost c")
    sim.add_argument("--no-sleep", action="store_true", help="answer without simulated latency")
    sim.add_argument("--drop-after", type=float, help="seconds after start of an acceptance drop")
    sim.add_argument("--drop-factor", type=float, default=0.7)
    sim.add_argument("--drop-task", help="the task the drop hits (default: all)")

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
    finally:
        await sidecar.stop()
    return 0


async def _run_sim(args: argparse.Namespace) -> int:
    from aiohttp import web

    from specwatch.sim.acceptance import AcceptanceModel, CostModel, Drop
    from specwatch.sim.server import SimConfig, SimServer

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
        acceptance=AcceptanceModel(drops=drops),
        cost=CostModel(target_step_ms=args.step_ms, draft_cost_ratio=args.draft_cost),
        sleep=not args.no_sleep,
    )
    runner = web.AppRunner(SimServer(config).app(), handler_cancellation=True, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, args.host, args.port).start()
    print(f"specwatch sim: {config.model} (K={config.num_spec_tokens}) on {runner.addresses}")
    try:
        await _serve_forever(asyncio.Event())
    finally:
        await runner.cleanup()
    return 0


def _run(coroutine: Coroutine[Any, Any, int]) -> int:
    """Run on uvloop where it is installed (Linux, macOS): a faster loop for the proxy path."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - e.g. Windows
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "sim":
            configure("info", "console")
            return _run(_run_sim(args))
        if args.command == "demo":
            from specwatch.demo import run_demo

            return _run(run_demo(args))
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
    try:
        return _run(_run_proxy(settings))
    except OSError as error:  # e.g. the port is taken
        print(f"specwatch: {error}", file=sys.stderr)
        return 1
