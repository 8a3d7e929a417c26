"""The command table (cli/commands.py) is the one place a command is dispatched from."""

from __future__ import annotations

import argparse
import inspect

from specwatch.cli.commands import COMMANDS
from specwatch.cli.grammar import parser

from tests.support import ROOT


def _grammar_commands() -> set[str]:
    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("the grammar has no subcommands")


def test_every_command_of_the_grammar_is_in_the_table_and_no_other() -> None:
    assert _grammar_commands() == set(COMMANDS)


def test_every_module_beside_shared_is_a_command_and_runs_the_same_way() -> None:
    """commands/ holds one module per command; what commands share is in commands/shared."""
    folder = ROOT / "agent" / "specwatch" / "commands"
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    tabled = {c.module.removeprefix("commands.") for c in COMMANDS.values()}
    assert modules == {m for m in tabled if not m.startswith("bench.")}
    for name, command in COMMANDS.items():
        parameters = list(inspect.signature(command.runner()).parameters)
        assert 2 == len(parameters), name  # run(args, settings)
