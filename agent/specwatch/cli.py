"""`specwatch serve | proxy | replay | advise | generate | snapshot | check-config | sim | bench |
demo`: the command line, parsed and dispatched to specwatch.commands (and bench, demo).

Settings: flags over SPECWATCH_* over --config YAML over defaults (settings.py); built here,
once per command, and passed down.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from specwatch import __version__
from specwatch.flags import add_setting_flags, settings_from
from specwatch.logs import configure
from specwatch.settings import ConfigError, Settings, load_settings


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
    add_setting_flags(serve)

    proxy = commands.add_parser("proxy", help="reverse proxy in front of a running vLLM")
    add_setting_flags(proxy)

    replay = commands.add_parser("replay", help="analyse cycle logs as the live sidecar would")
    replay.add_argument("files", nargs="+", type=Path, help="cycle log files (JSON lines, v1)")
    replay.add_argument("--json", action="store_true", help="print the /status document")
    add_setting_flags(replay)

    check = commands.add_parser("check-config", help="validate settings and print them")
    add_setting_flags(check)

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
    add_setting_flags(generate)

    advise_cmd = commands.add_parser(
        "advise", help="best draft length K from recorded traffic (cycle logs)"
    )
    advise_cmd.add_argument(
        "--cycle-log", dest="files", nargs="+", type=Path, required=True, help="cycle log files"
    )
    advise_cmd.add_argument(
        "--cost-ratio",
        type=float,
        help="c: draft step cost / target step cost (default: from A/B baseline records' "
        "decode times where the log has them, else speedup.default_cost_ratio)",
    )
    advise_cmd.add_argument("--json", action="store_true", help="print JSON")
    add_setting_flags(advise_cmd, only=("--ctx-buckets",))

    snap = commands.add_parser(
        "snapshot", help="the overview's key panels as a PNG, from Prometheus"
    )
    snap.add_argument("--prometheus", required=True, help="Prometheus base URL")
    snap.add_argument("--out", type=Path, required=True, help="PNG file to write")
    snap.add_argument("--model", default=".*", help="model (regex, default all)")
    snap.add_argument("--minutes", type=float, default=60.0, help="time range (60)")
    add_setting_flags(snap, only=("--config",))  # the zone thresholds

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


def _settings(args: argparse.Namespace) -> Settings:
    """The command's settings (raises ConfigError)."""
    if args.command == "demo":
        from specwatch.demo import demo_settings

        return demo_settings(args.port, args.admin_port)
    if args.command == "bench":
        overrides = {"ctx_buckets": args.ctx_buckets} if args.ctx_buckets else {}
        return load_settings(args.config, **overrides)
    if args.command == "sim":
        return load_settings()
    return settings_from(args)


def _dispatch(args: argparse.Namespace, settings: Settings, vllm_argv: list[str]) -> int:
    from specwatch.commands import offline
    from specwatch.commands.loop import run_loop

    command = args.command
    if command == "sim":
        from specwatch.commands.sim import run_sim

        return run_loop(run_sim(args))
    if command == "bench":
        from specwatch.bench.command import run as run_bench

        return run_bench(args, settings, vllm_argv)
    if command == "demo":
        from specwatch.demo import run_demo

        return run_loop(run_demo(args, settings))
    offline_commands = {
        "check-config": lambda: offline.check_config(settings),
        "replay": lambda: offline.run_replay(args, settings),
        "generate": lambda: offline.run_generate(args, settings),
        "advise": lambda: offline.run_advise(args, settings),
        "snapshot": lambda: offline.run_snapshot(args, settings),
    }
    if command in offline_commands:
        return offline_commands[command]()
    from specwatch.commands.live import run_proxy, run_serve

    try:
        if command == "serve":
            if not vllm_argv:
                print("specwatch: serve needs a vLLM command after --", file=sys.stderr)
                return 2
            return run_loop(run_serve(settings, vllm_argv))
        return run_loop(run_proxy(settings))
    except (OSError, ValueError) as error:  # e.g. the port is taken, an empty token file
        print(f"specwatch: {error}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    vllm_argv: list[str] = []
    if "--" in argv:  # everything after `--` is the vLLM command of `serve` (and bench)
        at = argv.index("--")
        argv, vllm_argv = argv[:at], argv[at + 1 :]
    args = _parser().parse_args(argv)
    args.argv = [*argv, *(["--", *vllm_argv] if vllm_argv else [])]
    try:
        settings = _settings(args)
    except ConfigError as error:
        for line in error.lines:
            print(f"specwatch: config: {line}", file=sys.stderr)
        return 2
    if args.command == "sim":
        configure("info", "console")
    elif args.command == "bench":
        configure("warning", "console")
    elif args.command != "demo":
        configure(settings.log_level, settings.log_format)
    return _dispatch(args, settings, vllm_argv)
