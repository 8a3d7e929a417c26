"""The command-line flags that set settings: one table, read to build the parser and the
overrides (flags win over SPECWATCH_* and --config; settings.py)."""

from __future__ import annotations

import argparse
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwatch.settings import Settings, load_settings


@dataclass(frozen=True, slots=True)
class Flag:
    flag: str
    path: tuple[str, ...]  # where it lands in the settings tree
    help: str
    group: str = "settings"


SETTINGS_GROUP = "settings (override SPECWATCH_* and --config)"
AB_GROUP = "A/B rollout (settings `ab`)"

FLAGS: tuple[Flag, ...] = (
    Flag("--host", ("host",), "bind address (default 127.0.0.1)"),
    Flag("--admin-host", ("admin_host",), "bind address of the admin port (default: --host)"),
    Flag("--port", ("port",), "proxy port (default 8000)"),
    Flag("--admin-port", ("admin_port",), "port of /metrics /status /healthz /readyz (9400)"),
    Flag("--upstream", ("upstream",), "vLLM base URL (default http://127.0.0.1:8001)"),
    Flag("--ctx-buckets", ("ctx_buckets",), "upper bounds, e.g. 512,2048,4096,8192,32768"),
    Flag("--task-header", ("tasks", "header"), "request header naming the task (X-Task-Type)"),
    Flag("--tasks", ("tasks", "allowlist"), "task allowlist, comma-separated"),
    Flag("--window", ("window", "length_seconds"), "window length in seconds (default 300)"),
    Flag("--zone-metric", ("zones", "metric"), "alpha (default) or rate"),
    Flag("--log-level", ("log_level",), "debug | info | warning | error"),
    Flag("--log-format", ("log_format",), "console | json"),
    Flag("--cycle-log", ("cycle_log", "path"), "append one JSON line per observed request"),
    Flag("--vllm-log", ("vllm_log",), "follow vLLM's log in FILE (vLLM in another container)"),
    Flag("--state-dir", ("state_dir",), "keep drift baselines across restarts in DIR"),
    Flag(
        "--speculative-config",
        ("speculative_config",),
        "the JSON vLLM runs with (serve reads vLLM's own)",
    ),
    Flag("--track", ("track",), "this pod's track in a rollout: stable (default), canary"),
    Flag("--scrape-interval", ("scrape_interval_seconds",), "seconds between scrapes (5)"),
    Flag("--drain-seconds", ("serve", "drain_seconds"), "how long streams may drain on stop (30)"),
    Flag("--baseline-upstream", ("ab", "baseline_upstream"), "a vLLM without speculation", "ab"),
    Flag("--baseline-percent", ("ab", "baseline_percent"), "sticky share to it, 0-100 (0)", "ab"),
    Flag("--ab-key-header", ("ab", "key_header"), "stickiness key (X-User-Id; else id)", "ab"),
    Flag("--rollback-file", ("ab", "rollback_file"), "while it exists, all -> baseline", "ab"),
    Flag(
        "--auto-rollback-seconds",
        ("ab", "auto_rollback_seconds"),
        "roll back when a model is red this long (off)",
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
        "share of greedy requests also compared on the baseline (0)",
        "ab",
    ),
)


def _dest(flag: Flag) -> str:
    return flag.flag.removeprefix("--").replace("-", "_")


def add_setting_flags(parser: argparse.ArgumentParser, only: tuple[str, ...] = ()) -> None:
    """--config and the setting flags (all of them, or the ones named in `only`)."""
    groups = {
        "settings": parser.add_argument_group(SETTINGS_GROUP),
        "ab": parser.add_argument_group(AB_GROUP),
    }
    groups["settings"].add_argument("--config", type=Path, help="YAML settings file")
    for flag in FLAGS:
        if not only or flag.flag in only:
            groups[flag.group].add_argument(flag.flag, dest=_dest(flag), help=flag.help)


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
