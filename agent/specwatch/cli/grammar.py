"""The command line's grammar: each command with what it does and only the flags it reads.

Every flag's help names its default and unit; a setting flag's default is read from the
settings themselves (flags.py), so the help cannot drift from what runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from specwatch import __version__, analysis_build
from specwatch.cli import simulated, values
from specwatch.cli.flags import (
    ANALYSIS_FLAGS,
    Help,
    add_command,
    add_setting_flags,
    setting_defaults,
)
from specwatch.conventions import Extreme


def parser() -> argparse.ArgumentParser:
    setting_defaults.cache_clear()
    top = argparse.ArgumentParser(
        prog="specwatch",
        description="Monitoring sidecar and SLO alerting for speculative decoding on vLLM.",
        formatter_class=Help,
    )
    version = f"specwatch {__version__} (analysis: {analysis_build()})"
    top.add_argument("--version", action="version", version=version)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _live(commands)
    _offline(commands)
    _fleet(commands)
    simulated.add_commands(commands)
    return top


def _live(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = add_command(
        commands,
        "serve",
        "start vLLM as a child process and proxy it",
        "Everything after -- is the vLLM command (`vllm serve MODEL --speculative-config ...`).\n"
        "specwatch reads its config from that line, gives vLLM the flags it needs to report\n"
        "per-request draft/accept data, forwards clients' requests to it unchanged, and serves\n"
        "/metrics, /status, /healthz and /readyz on the admin port.",
        usage="specwatch serve [options] -- VLLM_COMMAND ...",
    )
    add_setting_flags(serve)
    proxy = add_command(
        commands,
        "proxy",
        "reverse proxy in front of a vLLM that runs elsewhere",
        "Clients send their OpenAI requests to --port; specwatch forwards them to --upstream\n"
        "unchanged, reads each response's per-step acceptance, scrapes vLLM's /metrics and\n"
        "serves /metrics, /status, /healthz and /readyz on the admin port. Give it vLLM's\n"
        "--speculative-config (the same JSON) so its numbers name the config they belong to.",
    )
    add_setting_flags(proxy)
    check = add_command(
        commands,
        "check-config",
        "validate the settings serve and proxy would run with, and print them",
        "Reads --config, SPECWATCH_* variables and the flags exactly as serve and proxy do\n"
        "(flags win over the environment, which wins over the file) and prints the result as\n"
        "JSON; a bad or unknown setting is one line on stderr and exit status 2.",
    )
    add_setting_flags(check)


def _verbose(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--verbose",
        action="store_true",
        help="the analysis' log on stderr too (zone_changed, drift alarms; --log-format)",
    )


def _offline(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _replay_command(commands)
    _worst_command(commands)
    _generate_command(commands)
    _advise_command(commands)
    _snapshot_command(commands)


def _replay_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = add_command(
        commands,
        "replay",
        "analyse cycle logs as the live sidecar would have",
        "Reads cycle logs (--cycle-log's JSON lines; gzip-compressed ones too) and runs the\n"
        "live analysis over them on their own clock. The table shows each slice since the\n"
        "first record (--last-window: over the last verdict window only) and the zone the\n"
        "sidecar would show at the last record. Exit status 1 when no file holds a record.",
    )
    replay.add_argument("files", nargs="+", type=Path, metavar="FILE", help="cycle log files")
    replay.add_argument("--json", action="store_true", help="print the /status document")
    replay.add_argument(
        "--last-window",
        action="store_true",
        help="the table over the last verdict window (--window) instead of since the start",
    )
    _verbose(replay)
    add_setting_flags(replay, only=ANALYSIS_FLAGS)


def _worst_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worst = add_command(
        commands,
        "worst",
        "the requests behind extremes and red slices, from cycle logs",
        "Replays cycle logs and lists, a JSON line each, the requests that accepted nearly\n"
        "all they tried (kind high: repetition loops) or nearly none (low), and the requests\n"
        "of slices red at the end that accepted less than the red threshold (low), worst\n"
        "first, with their per-position acceptance and their slice's causes: hard samples to\n"
        "retrain a draft on, joined by request_id. Text only if the log holds it\n"
        "(cycle_log.capture_text).",
    )
    worst.add_argument("files", nargs="+", type=Path, metavar="FILE", help="cycle log files")
    worst.add_argument(
        "--kind", choices=[k.value for k in Extreme], help="only this kind (default: both)"
    )
    worst.add_argument("--limit", type=int, default=100, metavar="N", help="rows of each kind")
    worst.add_argument("--json", action="store_true", help="one document, not JSON lines")
    add_setting_flags(worst, only=ANALYSIS_FLAGS)


def _generate_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    generate = add_command(
        commands,
        "generate",
        "write the Prometheus rules, Alertmanager config, dashboards and runbooks",
        "Renders every generated artifact from the settings (zone thresholds, windows, SLO,\n"
        "receivers) into the repository layout under --out; --check compares instead.",
    )
    generate.add_argument("--out", type=Path, default=Path(), metavar="DIR", help="repository root")
    generate.add_argument(
        "--check", action="store_true", help="compare with the files under --out; write nothing"
    )
    generate.add_argument(
        "--time-scale",
        type=values.positive,
        default=1.0,
        help="divide every window and `for:` by N (live tests, demos); 1 is production",
    )
    add_setting_flags(generate, only=("--window",))


def _advise_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    advise = add_command(
        commands,
        "advise",
        "best draft length K from recorded traffic (cycle logs)",
        "Measures per-position acceptance from cycle logs and predicts the speedup of each\n"
        "K up to the one in use, per model and per slice, with the K table by batch size\n"
        "(num_speculative_tokens_per_batch_size). A model or slice with fewer requests or\n"
        "verified draft tokens than a zone verdict needs (zones.min_requests, min_trials) is\n"
        "not advised on; exit status 1 when no model has enough.",
    )
    advise.add_argument(
        "--cycle-log",
        dest="files",
        nargs="+",
        type=Path,
        required=True,
        metavar="FILE",
        help="cycle log files",
    )
    advise.add_argument(
        "--cost-ratio",
        type=float,
        metavar="C",
        help="c: draft step cost / target step cost (default: from A/B baseline records' "
        "decode times where the log has them, else speedup.default_cost_ratio)",
    )
    advise.add_argument("--json", action="store_true", help="print JSON")
    _verbose(advise)
    add_setting_flags(advise, only=("--ctx-buckets",))


def _snapshot_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    snap = add_command(
        commands,
        "snapshot",
        "the overview dashboard's key panels as a PNG, from Prometheus",
        "Queries Prometheus for the recorded series the overview dashboard shows and draws\n"
        "them (zones, acceptance by slice, gain) into one PNG: for a ticket or a chat.",
    )
    snap.add_argument("--prometheus", required=True, metavar="URL", help="Prometheus base URL")
    snap.add_argument("--out", type=Path, required=True, metavar="FILE", help="PNG to write")
    snap.add_argument("--model", default=".*", help="model, a regex")
    snap.add_argument("--minutes", type=float, default=60.0, help="time range, minutes")
    add_setting_flags(snap, only=("--config",))  # the zone thresholds


def _fleet_flags(command: argparse.ArgumentParser) -> None:
    """What analyze and compare share: the range, DuckDB's resources, the settings."""
    command.add_argument(
        "--since",
        metavar="T",
        help="from T on: unix seconds, ISO 8601 (UTC), or back from now (24h, 7d)",
    )
    command.add_argument("--until", metavar="T", help="before T (as --since)")
    command.add_argument(
        "--threads", type=int, metavar="N", help="DuckDB's threads (default: one per core)"
    )
    command.add_argument(
        "--memory-limit", default="2GB", metavar="SIZE", help="DuckDB's memory limit, e.g. 2GB"
    )
    command.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_setting_flags(command, only=("--ctx-buckets", "--config"))


def _fleet(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    analyze = add_command(
        commands,
        "analyze",
        "acceptance over many cycle logs (a fleet's, a week of them) on DuckDB",
        "Reads cycle logs (JSON lines, gzip-rotated ones, Parquet; files, directories or\n"
        "globs) and sums each group's steps, each step in the ctx bucket of its own position\n"
        "as the sidecar counts it; alpha with its request-level interval, rate, tau and the\n"
        "per-position acceptance by the sidecar's own statistics. Needs the `analyze` extra\n"
        "(pip install 'specwatch[analyze]'). Exit status 1 when no speculative request is read.",
    )
    analyze.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, globs")
    analyze.add_argument(
        "--by",
        default="model,ctx_bucket,task",
        metavar="DIMS",
        help="group by, comma-separated: model, config, track, ctx_bucket, task, load, day",
    )
    output = analyze.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON document on stdout")
    output.add_argument("--csv", type=Path, metavar="FILE", help="write the groups as CSV")
    output.add_argument("--parquet", type=Path, metavar="FILE", help="write them as Parquet")
    analyze.add_argument(
        "--k-table", action="store_true", help="also the K table by batch size (as advise's)"
    )
    analyze.add_argument(
        "--tpot",
        action="store_true",
        help="also each group's decode time per output token with its interval (reads the "
        "latency column too)",
    )
    analyze.add_argument(
        "--slo",
        action="store_true",
        help="also each latency objective's attainment (latency_slos) per group and variant, "
        "with its interval (the table and --json)",
    )
    analyze.add_argument(
        "--cost-ratio",
        type=float,
        metavar="C",
        help="c for the K table (default: as advise finds it)",
    )
    _fleet_flags(analyze)

    compare = add_command(
        commands,
        "compare",
        "config B against config A (canary, upgrade, new draft) from cycle logs",
        "Per slice the difference B - A of alpha with its interval (independent samples of\n"
        "requests), a verdict better / worse / same / insufficient guarded family-wise across\n"
        "the slices compared, and per model the overall change at B's traffic mix and the\n"
        "mix shift: the live canary comparison's statistics; and per slice and model the\n"
        "ratio B / A of the decode time per output token (TPOT), compared at the same load\n"
        "at B's mix, verdict faster / slower / same / insufficient, and which factor decides\n"
        "(each step's time, or the tokens a step yields). A and B are two paths (files,\n"
        "directories, globs), or one set split by --split config|track (A: stable, or the\n"
        "older config; B: the canary, or the newer config).",
    )
    compare.add_argument("paths", nargs="+", metavar="PATH", help="A and B, or the set to split")
    compare.add_argument(
        "--by", default="model,ctx_bucket,task", metavar="DIMS", help="the slices (as analyze's)"
    )
    compare.add_argument("--split", choices=("config", "track"), help="one set, split by this")
    compare.add_argument("--a", metavar="VALUE", help="with --split: side A's value")
    compare.add_argument("--b", metavar="VALUE", help="with --split: side B's value")
    compare.add_argument(
        "--metric",
        choices=("tpot", "alpha"),
        help="compare only this: goodput (TPOT) or acceptance (alpha); both by default",
    )
    compare.add_argument("--json", action="store_true", help="one JSON document on stdout")
    _fleet_flags(compare)
