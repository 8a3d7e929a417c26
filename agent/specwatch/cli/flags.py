"""The command-line flags that set settings: one table, read to build the parser and the
overrides (flags win over SPECWATCH_* and --config; settings.py)."""

from __future__ import annotations

import argparse
import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwatch.settings import ConfigError, Settings, load_settings


@dataclass(frozen=True, slots=True)
class Flag:
    flag: str
    path: tuple[str, ...]  # where it lands in the settings tree
    help: str
    group: str = "settings"


SETTINGS_GROUP = "settings (override SPECWATCH_* and --config)"
AB_GROUP = "A/B rollout (settings `ab`)"

FLAGS: tuple[Flag, ...] = (
    Flag("--host", ("host",), "bind address of the proxy port"),
    Flag("--admin-host", ("admin_host",), "bind address of the admin port (default: --host)"),
    Flag("--port", ("port",), "proxy port, where clients send OpenAI requests"),
    Flag("--admin-port", ("admin_port",), "port of /metrics /status /healthz /readyz"),
    Flag("--upstream", ("upstream",), "vLLM's address, without a path"),
    Flag("--ctx-buckets", ("ctx_buckets",), "ctx bucket upper bounds in tokens, comma-separated"),
    Flag("--task-header", ("tasks", "header"), "request header naming the task"),
    Flag("--tasks", ("tasks", "allowlist"), "task names kept as labels, comma-separated"),
    Flag("--window", ("window", "length_seconds"), "verdict window, seconds"),
    Flag("--zone-metric", ("zones", "metric"), "what zones judge: alpha or rate"),
    Flag("--log-level", ("log_level",), "debug | info | warning | error"),
    Flag("--log-format", ("log_format",), "console | json"),
    Flag("--cycle-log", ("cycle_log", "path"), "append one JSON line per observed request to FILE"),
    Flag("--vllm-log", ("vllm_log",), "follow vLLM's log in FILE (vLLM in another container)"),
    Flag("--state-dir", ("state_dir",), "keep drift baselines and configs across restarts in DIR"),
    Flag(
        "--speculative-config",
        ("speculative_config",),
        "the JSON vLLM runs with (serve reads vLLM's own)",
    ),
    Flag("--track", ("track",), "this pod's track in a rollout: stable, canary, ..."),
    Flag("--scrape-interval", ("scrape_interval_seconds",), "seconds between /metrics scrapes"),
    Flag("--drain-seconds", ("serve", "drain_seconds"), "how long streams may drain on stop"),
    Flag("--baseline-upstream", ("ab", "baseline_upstream"), "a vLLM without speculation", "ab"),
    Flag("--baseline-percent", ("ab", "baseline_percent"), "sticky share to it, 0-100", "ab"),
    Flag("--ab-key-header", ("ab", "key_header"), "stickiness key (else the request id)", "ab"),
    Flag("--rollback-file", ("ab", "rollback_file"), "while it exists, all -> baseline", "ab"),
    Flag(
        "--auto-rollback-seconds",
        ("ab", "auto_rollback_seconds"),
        "roll back when a model is red this long, seconds",
        "ab",
    ),
    Flag(
        "--admin-token-file",
        ("ab", "admin_token_file"),
        "bearer token for POST /admin/* (needed off loopback)",
        "ab",
    ),
    Flag(
        "--shadow-fraction",
        ("shadow", "fraction"),
        "share of greedy requests also compared on the baseline",
        "ab",
    ),
)

# What each command reads of the settings: the others would be accepted and do nothing.
ANALYSIS_FLAGS = (
    "--ctx-buckets",
    "--tasks",
    "--window",
    "--zone-metric",
    "--log-level",  # the analysis logs each verdict change (`zone_changed`), as live
    "--log-format",
)


@functools.cache
def setting_defaults() -> tuple[Settings, str | None]:
    """The settings the help shows as defaults, and why they are the built-in ones when they
    are: built once per command line (a build reads the environment and validates every part,
    milliseconds each; the parser has a dozen commands); `arguments.parser()` clears it, so
    each parser sees the environment of now. Help never needs valid settings: with a bad
    SPECWATCH_* value it shows the built-in defaults and says so above them."""
    try:
        return load_settings(), None
    except ConfigError as error:  # load_settings says every bad value so
        return Settings.model_construct(), error.lines[0]


def _default(defaults: Settings, path: tuple[str, ...]) -> Any:
    node: Any = defaults
    for part in path:
        node = getattr(node, part)
    return node


def _shown(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ", ".join(str(item) for item in value)  # wrapped at the spaces, not mid-word
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Help(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; a flag's default appended when its help does not say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or default is None
            or default is False
            or default == argparse.SUPPRESS
            or "default" in text
            or (action.nargs == 0)
        ):
            return text
        return f"{text} (default: {default})"

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        """A flag without its own metavar shows what it takes, not its name shouted:
        SECONDS, N (a count), X (a number), else the last word of its name (TASK)."""
        dest = action.dest
        if dest.endswith(("seconds", "timeout", "interval", "after")):
            return "SECONDS"
        if action.type is int:
            return "N"
        if action.type is float:
            return "X"
        return dest.rsplit("_", 1)[-1].upper()


def _dest(flag: Flag) -> str:
    return flag.flag.removeprefix("--").replace("-", "_")


def add_setting_flags(parser: argparse.ArgumentParser, only: tuple[str, ...] = ()) -> None:
    """--config and the setting flags (all of them, or the ones named in `only`)."""
    defaults, broken = setting_defaults()
    note = None if broken is None else f"the defaults shown are the built-in ones: {broken}"
    groups = {
        "settings": parser.add_argument_group(SETTINGS_GROUP, note),
        "ab": parser.add_argument_group(AB_GROUP),
    }
    groups["settings"].add_argument(
        "--config", type=Path, metavar="FILE", help="YAML settings file"
    )
    for flag in FLAGS:
        if not only or flag.flag in only:
            default = _default(defaults, flag.path)
            shown = "" if default is None else f" (default: {_shown(default)})"
            groups[flag.group].add_argument(
                flag.flag, dest=_dest(flag), help=flag.help + shown, metavar=_metavar(flag)
            )


METAVARS = {
    "--port": "PORT",
    "--admin-port": "PORT",
    "--host": "ADDRESS",
    "--admin-host": "ADDRESS",
    "--upstream": "URL",
    "--baseline-upstream": "URL",
    "--ctx-buckets": "BOUNDS",
    "--task-header": "HEADER",
    "--tasks": "NAMES",
    "--zone-metric": "{alpha,rate}",
    "--log-level": "LEVEL",
    "--log-format": "{console,json}",
    "--cycle-log": "FILE",
    "--vllm-log": "FILE",
    "--state-dir": "DIR",
    "--speculative-config": "JSON",
    "--track": "NAME",
    "--baseline-percent": "PERCENT",
    "--ab-key-header": "HEADER",
    "--rollback-file": "FILE",
    "--admin-token-file": "FILE",
    "--shadow-fraction": "FRACTION",
}


def _metavar(flag: Flag) -> str:
    if flag.flag in METAVARS:
        return METAVARS[flag.flag]
    return "SECONDS" if flag.path[-1].endswith("seconds") else flag.path[-1].upper()


def settings_from(args: argparse.Namespace, **extra: Any) -> Settings:
    """The settings of one command: its flags over the environment, the file, the defaults;
    `extra` (a command's own presets) under the flags. Raises ConfigError."""
    overrides: dict[str, Any] = copy.deepcopy(extra)
    for flag in FLAGS:
        value = getattr(args, _dest(flag), None)
        if value is None:
            continue
        node = overrides
        for part in flag.path[:-1]:
            node = node.setdefault(part, {})
        node[flag.path[-1]] = value
    return load_settings(getattr(args, "config", None), **overrides)


def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    description: str,
    usage: str | None = None,
) -> argparse.ArgumentParser:
    return commands.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}.\n\n{description}",
        formatter_class=Help,
        usage=usage,
    )
