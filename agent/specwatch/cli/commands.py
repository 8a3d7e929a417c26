"""Every command in one table: the module that runs it, the extra it needs, and how it logs.

Each module has `run(args, settings) -> int`, imported only when its command runs: `--help` and
the sidecar never load what the bench, snapshot or fleet commands need (matplotlib, DuckDB).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

from specwatch.settings import Settings

# settings: the log level and format the settings give; quiet: warnings only, on the console
# (the output is the product); verbose: the same unless --verbose; info: info on the console;
# own: the command sets up its own (the demo's screen)
Logs = Literal["settings", "quiet", "verbose", "info", "own"]
Run = Callable[[argparse.Namespace, Settings], int]


@dataclass(frozen=True, slots=True)
class Command:
    module: str  # under specwatch
    logs: Logs = "settings"
    extra: str = ""  # the pip extra that installs what it needs beyond the sidecar's own
    needs: tuple[str, ...] = ()

    def missing(self) -> list[str]:
        return [name for name in self.needs if importlib.util.find_spec(name) is None]

    def runner(self) -> Run:
        return cast(Run, importlib.import_module(f"specwatch.{self.module}").run)


COMMANDS: dict[str, Command] = {
    "serve": Command("commands.serve"),
    "proxy": Command("commands.proxy"),
    "check-config": Command("commands.check_config"),
    "generate": Command("commands.generate"),
    "replay": Command("commands.replay", "verbose"),
    "advise": Command("commands.advise", "verbose"),
    "worst": Command("commands.worst", "quiet"),
    "snapshot": Command("commands.snapshot", "settings", "bench", ("matplotlib",)),
    "analyze": Command("commands.analyze", "quiet", "analyze", ("duckdb",)),
    "compare": Command("commands.compare", "quiet", "analyze", ("duckdb",)),
    "bench": Command("bench.command", "quiet", "bench", ("numpy", "matplotlib", "sacrebleu")),
    "sim": Command("commands.sim", "info"),
    "demo": Command("commands.demo", "own"),
}


def run(name: str, args: argparse.Namespace, settings: Settings) -> int:
    command = COMMANDS[name]
    missing = command.missing()
    if missing:
        needed = ", ".join(missing)
        print(
            f"specwatch: {name} needs {needed}: pip install 'specwatch[{command.extra}]'",
            file=sys.stderr,
        )
        return 2
    return command.runner()(args, settings)
