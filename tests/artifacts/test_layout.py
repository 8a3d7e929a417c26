"""The rules of the house (docs/architecture.md), checked on the source itself."""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT
from tests.support.floors import layout_block

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
    if path.name != "__main__.py" and where != "cli":  # cli dispatches; nothing imports it
        assert [] == [m for m in found if m == "specwatch.cli" or m.startswith("specwatch.cli.")]
    if where == "commands" and "shared" not in path.parts:  # commands stand alone
        others = {m for m in found if m.startswith("specwatch.commands.")}
        assert {m for m in others if not m.startswith("specwatch.commands.shared")} == set()
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
        allowed = (
            "specwatch.conventions",
            "specwatch.settings",
            "specwatch.analysis.counting.stats",
            "specwatch.gen",
        )
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


def _tool(name: str) -> Any:
    """tools/NAME.py loaded as a module (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_guarded_line_of_the_mutation_list_is_still_in_the_source() -> None:
    """tools/mutations.py replaces exact lines: one that moved would make `make mutations`
    stop on it, so the list follows the source (a drift refactor once left one behind)."""
    module = _tool("mutations")
    assert len(module.MUTATIONS) >= 16
    for mutation in module.MUTATIONS:
        source = (PACKAGE / mutation.path).read_text()
        assert source.count(mutation.old) == 1, mutation.name
        assert mutation.new != mutation.old, mutation.name
        # the tests that must catch it exist: pytest on a missing one fails, which would read
        # as caught (a renamed test once left a mutation judged on nothing)
        for test in mutation.tests:
            path, _, name = test.partition("::")
            assert (ROOT / path).exists(), (mutation.name, path)
            if name:
                text = (ROOT / path).read_text()
                assert re.search(rf"^(async )?def {name}\(", text, re.M), (mutation.name, test)


def test_every_equivalent_mutant_names_a_line_still_in_its_module_and_says_why() -> None:
    """tools/mutate.py's EQUIVALENT leaves mutants out of the kill rate by their original line:
    one that moved would leave nothing out silently, one without a reason is no argument."""
    module = _tool("mutate")
    for (path, old, new), why in module.EQUIVALENT.items():
        lines = [line.strip() for line in (PACKAGE / path).read_text().splitlines()]
        assert old in lines, (path, old)
        # a line found twice exempts both: only where the reason holds at each, said so
        assert lines.count(old) == 1 or (path, old) in module.EVERY_OCCURRENCE, (path, old)
        assert new != old, (path, old)
        assert len(why) > 20, (path, old)


def test_every_rule_module_is_in_one_mutation_part_and_each_part_runs_tests_that_exist() -> None:
    """tools/mutate.py's parts cover analysis/ and gen/ module by module (a new module is
    mutated, and once: two parts would count it twice), and name tests that exist (mutmut on
    a selection of nothing would report every mutant `no tests`, not fail)."""
    module = _tool("mutate")
    for room in ("analysis", "gen"):
        for path in sorted((PACKAGE / room).rglob("*.py")):
            name = path.relative_to(PACKAGE).as_posix()
            owners = [
                part
                for part, spec_ in module.PARTS.items()
                if any(fnmatch.fnmatch(name, glob) for glob in spec_.modules)
            ]
            assert path.name == "__init__.py" or len(owners) == 1, (name, owners)
    for part in module.PARTS.values():
        for test in (*part.tests, *part.deselect):
            assert (ROOT / test.partition("::")[0]).exists(), test
    # an equivalent mutant is looked up by its original and mutated line, the diff's headers
    # not among them
    assert ("x = 1", "x = 2") == module.changed("--- a.py\n+++ a.py\n-  x = 1\n+  x = 2")


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


def test_unit_tests_mirror_the_package() -> None:
    """tests/unit/<room>/ for a room of the package: a newcomer finds a module's tests by its
    path, and no test file stands loose beside the rooms."""
    unit = ROOT / "tests" / "unit"
    rooms = {
        path.name for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"
    }
    folders = {path.name for path in unit.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert set() == folders - rooms
    assert [] == sorted(path.name for path in unit.glob("test_*.py"))


# a pointer at a document's section: the README's or a document's under docs/, then
# `, section "Title"` (the title as the heading spells it)
SECTION = re.compile(r"(README|[\w./-]+\.md),\s+(?:#\s*)?section [\"']([^\"']+)[\"']")


def _pointers() -> list[tuple[str, str, str]]:
    found = []
    for folder in ("agent", "benchmarks", "tools", "tests", "docs", "alerts", "deploy"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".py", ".md", ".yaml", ".sh"} or "fixtures" in path.parts:
                continue
            if path == Path(__file__):  # the pattern's own examples above
                continue
            for document, title in SECTION.findall(path.read_text(errors="replace")):
                found.append((str(path.relative_to(ROOT)), document, title))
    return found


def test_every_pointer_at_a_section_names_one_that_exists() -> None:
    """A comment that sends the reader to a section sends them somewhere: when a heading is
    renamed or moved, the pointers to it fail here rather than point at nothing."""
    pointers = _pointers()
    assert len(pointers) >= 4
    missing = []
    for where, document, title in pointers:
        path = ROOT / ("README.md" if document == "README" else document)
        headings = {
            line.lstrip("#").strip()
            for line in (path.read_text().splitlines() if path.is_file() else [])
            if line.startswith("#")
        }
        if title not in headings:
            missing.append((where, document, title))
    assert [] == missing


LAYOUT_LINE = re.compile(r"^(?P<indent> *)(?P<name>[a-z_0-9]+(?:\.py|/))(?:\s|$)")


def documented_modules() -> set[str]:
    """The modules docs/architecture.md's layout block names, as paths under the package: a
    name's indentation (two spaces a level) says its folder; deeper lines continue a
    description."""
    block = layout_block()
    folders: list[str] = []
    named: set[str] = set()
    for line in block.splitlines():
        match = LAYOUT_LINE.match(line)
        if match is None or len(match["indent"]) % 2:
            continue
        depth = len(match["indent"]) // 2 - 1
        if depth > len(folders):  # indented past any folder: a description's next line
            continue
        del folders[depth:]
        name = match["name"]
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
        else:
            named.add("/".join([*folders, name]))
    return named


def test_the_plan_names_every_module_and_only_modules_that_exist() -> None:
    """docs/architecture.md's layout is the plan a newcomer reads first: a module added,
    moved or removed without it fails here."""
    modules = {
        path.relative_to(PACKAGE).as_posix() for path in MODULES if path.name != "__init__.py"
    }
    named = documented_modules()
    assert len(named) >= 100
    assert set() == modules - named, "modules missing from docs/architecture.md"
    assert set() == named - modules, "named in docs/architecture.md but not in the package"
