"""The rules of the house (docs/architecture.md), checked on the source itself."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGE = ROOT / "agent" / "specwatch"
MODULES = sorted(PACKAGE.rglob("*.py"))


def imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            if node.module == "specwatch":  # from specwatch import conventions as C
                out |= {f"specwatch.{alias.name}" for alias in node.names}
    return out


# where data enters and leaves: the request path, vLLM's formats and process, our own files
OUTSIDE = ("specwatch.proxy", "specwatch.vllm", "specwatch.store")


def package_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_past_400_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= 400


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path: Path) -> None:
    found = imports(path)
    where = package_of(path)
    if path.name != "__main__.py":
        assert "specwatch.cli" not in found  # cli dispatches; nothing imports it
    if where == "analysis":  # pure: fed records and a clock
        assert not {m for m in found if m.split(".")[0] in {"aiohttp", "prometheus_client"}}
        assert not {m for m in found if m.startswith((*OUTSIDE, "specwatch.export"))}
    if where == "export":  # reads snapshots only
        assert not {m for m in found if m.startswith(OUTSIDE)}
    if "duckdb" in {m.split(".")[0] for m in found}:  # the `analyze` extra: fleet/ alone
        assert where == "fleet"
    if any(m.startswith("specwatch.fleet") for m in found):  # never on the sidecar's path
        assert where in {"fleet", "commands"}
    if where == "gen":  # names, settings, and the formulas the rules share with the sidecar
        allowed = ("specwatch.conventions", "specwatch.settings", "specwatch.analysis.stats",
                   "specwatch.gen")  # fmt: skip
        ours = {m for m in found if m.startswith("specwatch.")}
        assert {m for m in ours if not m.startswith(allowed)} == set()


def test_every_metric_name_is_spelled_in_the_conventions() -> None:
    """Exported families in counters.py and metrics.py, recorded series' parts in recorded.py."""
    spelled = {
        path.relative_to(PACKAGE).as_posix()
        for path in MODULES
        if re.search(r"specwatch_[a-z]", path.read_text())
    }
    expected = {"conventions/counters.py", "conventions/metrics.py", "conventions/recorded.py"}
    assert expected == spelled


def test_every_guarded_line_of_the_mutation_list_is_still_in_the_source() -> None:
    """tools/mutations.py replaces exact lines: one that moved would make `make mutations`
    stop on it, so the list follows the source (a drift refactor once left one behind)."""
    spec = importlib.util.spec_from_file_location("mutations", ROOT / "tools" / "mutations.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutations"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    assert len(module.MUTATIONS) >= 16
    for mutation in module.MUTATIONS:
        source = (PACKAGE / mutation.path).read_text()
        assert source.count(mutation.old) == 1, mutation.name
        assert mutation.new != mutation.old, mutation.name


TESTS = sorted((ROOT / "tests").rglob("test_*.py"))
# a literal sleep of a second or more; allowed only where it says what it waits out and why
# no state can be polled instead (`# waits out: ...`)
LONG_SLEEP = re.compile(r"sleep\((\d+(?:\.\d+)?)\)")


@pytest.mark.parametrize("path", TESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_test_module_imports_another(path: Path) -> None:
    """Shared helpers live in tests/support: a test module is never a library."""
    found = {
        name
        for name in imports(path)
        if re.match(r"tests\.(unit|integration|e2e|artifacts|fuzz)\b", name)
    }
    assert set() == found


@pytest.mark.parametrize("path", TESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_fixed_sleep_where_a_state_can_be_polled(path: Path) -> None:
    long = [
        (number, line.strip())
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for seconds in LONG_SLEEP.findall(line)
        if float(seconds) >= 1 and "# waits out:" not in line
    ]
    assert [] == long


def test_modules_are_not_packed_to_stay_under_the_line_limit() -> None:
    """The 400-line rule is kept by splitting a module by what it does, not by `# fmt: skip`
    on dense lines: a handful at most, where a table reads better aligned."""
    skipped = sum(path.read_text().count("# fmt: skip") for path in MODULES)
    assert skipped <= 5
