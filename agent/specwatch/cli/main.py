"""`specwatch COMMAND`: the command line parsed (grammar.py), the settings built once, the
logging set up, and the command run from its table (commands.py).

Settings: flags over SPECWATCH_* over --config YAML over defaults (specwatch/settings); built
here, once per command, and passed down.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from specwatch.cli.commands import COMMANDS
from specwatch.cli.commands import run as run_command
from specwatch.cli.flags import settings_from
from specwatch.cli.grammar import parser
from specwatch.core.logs import configure
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
    args.vllm_argv = vllm_argv
    _configure_logs(args, settings)
    return run_command(args.command, args, settings)


def _configure_logs(args: argparse.Namespace, settings: Settings) -> None:
    logs = COMMANDS[args.command].logs
    if logs == "settings":
        configure(settings.log_level, settings.log_format)
    elif logs == "verbose":  # the table or document is the product: info only when asked
        configure("info" if args.verbose else "warning", settings.log_format)
    elif logs == "quiet":  # the output is the product
        configure("warning", "console")
    elif logs == "info":
        configure("info", "console")
