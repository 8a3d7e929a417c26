"""`specwatch serve | proxy | replay | worst | advise | generate | snapshot | check-config | sim |
bench | demo`: the command line, parsed and dispatched to specwatch.commands (and bench, demo).

Settings: flags over SPECWATCH_* over --config YAML over defaults (settings.py); built here,
once per command, and passed down.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence

from specwatch.arguments import parser
from specwatch.flags import settings_from
from specwatch.logs import configure
from specwatch.settings import ConfigError, Settings, load_settings


def _settings(args: argparse.Namespace) -> Settings:
    """The command's settings (raises ConfigError)."""
    if args.command == "demo":
        from specwatch.commands.demo import demo_settings

        return demo_settings(args.port, args.admin_port)
    if args.command == "bench":
        overrides = {"ctx_buckets": args.ctx_buckets} if args.ctx_buckets else {}
        return load_settings(args.config, **overrides)
    if args.command == "sim":
        return load_settings()
    return settings_from(args)


# what the commands outside the sidecar's own work need beyond its dependencies, and the extra
# that installs it (kept out of the sidecar's image)
EXTRAS = {
    "bench": ("bench", ("numpy", "matplotlib", "sacrebleu")),
    "snapshot": ("bench", ("matplotlib",)),
    "analyze": ("analyze", ("duckdb",)),
    "compare": ("analyze", ("duckdb",)),
}


def _dispatch(args: argparse.Namespace, settings: Settings, vllm_argv: list[str]) -> int:
    from specwatch.commands import offline

    command = args.command
    extra, needed = EXTRAS.get(command, ("", ()))
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"specwatch: {command} needs {', '.join(missing)}: pip install 'specwatch[{extra}]'",
            file=sys.stderr,
        )
        return 2
    if command == "bench":
        from specwatch.bench.command import run as run_bench

        return run_bench(args, settings, vllm_argv)
    offline_commands = {
        "check-config": lambda: offline.check_config(settings),
        "replay": lambda: offline.run_replay(args, settings),
        "generate": lambda: offline.run_generate(args, settings),
        "advise": lambda: offline.run_advise(args, settings),
        "snapshot": lambda: offline.run_snapshot(args, settings),
        "worst": lambda: _worst(args, settings),
        "analyze": lambda: _fleet(args, settings),
        "compare": lambda: _fleet(args, settings),
    }
    if command in offline_commands:
        return offline_commands[command]()
    if command == "serve" and not vllm_argv:
        print("specwatch: serve needs a vLLM command after --", file=sys.stderr)
        return 2
    try:
        return _serving(command, args, settings, vllm_argv)
    except (OSError, ValueError) as error:  # e.g. the port is taken, an empty token file
        print(f"specwatch: {command}: {error}", file=sys.stderr)
        return 1


def _worst(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.commands.worst import run_worst

    return run_worst(args, settings)


def _fleet(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "analyze":
        from specwatch.commands.analyze import run_analyze

        return run_analyze(args, settings)
    from specwatch.commands.compare import run_compare

    return run_compare(args, settings)


def _serving(
    command: str, args: argparse.Namespace, settings: Settings, vllm_argv: list[str]
) -> int:
    """The commands that listen until stopped: serve, proxy, sim, demo."""
    from specwatch.commands.loop import run_loop

    if command == "sim":
        from specwatch.commands.sim import run_sim

        return run_loop(run_sim(args))
    if command == "demo":
        from specwatch.commands.demo import run_demo

        return run_loop(run_demo(args, settings))
    from specwatch.commands.live import run_proxy, run_serve

    if command == "serve":
        return run_loop(run_serve(settings, vllm_argv))
    return run_loop(run_proxy(settings))


def _subparser(top: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    vllm_argv: list[str] = []
    if "--" in argv:  # everything after `--` is the vLLM command of `serve` (and bench)
        at = argv.index("--")
        argv, vllm_argv = argv[:at], argv[at + 1 :]
    top = parser()
    args, unknown = top.parse_known_args(argv)
    if unknown:  # said by the command's own parser: its usage, not the top level's
        command = _subparser(top, args.command)
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = [*argv, *(["--", *vllm_argv] if vllm_argv else [])]
    try:
        settings = _settings(args)
    except ConfigError as error:
        for line in error.lines:
            print(f"specwatch: config: {line}", file=sys.stderr)
        return 2
    if args.command == "sim":
        configure("info", "console")
    elif args.command in ("bench", "worst", "analyze", "compare"):  # output is the product
        configure("warning", "console")
    elif args.command in ("replay", "advise"):  # the table or document is the product
        configure("info" if args.verbose else "warning", settings.log_format)
    elif args.command != "demo":
        configure(settings.log_level, settings.log_format)
    return _dispatch(args, settings, vllm_argv)
