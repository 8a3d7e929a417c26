"""A hand-written promtool test run on the rules it can reach, not on all of them.

promtool evaluates every rule of the files a test loads at every step of its cases: with ~400
recording rules, a case of 400 simulated minutes costs minutes of CPU, almost all of it on rules
whose inputs the case never writes. An alert depends only on the rules its expression and its
annotations' queries read, and theirs in turn; the rest cannot change what it says. So each test
runs on a copy of the generated files holding that closure, rules verbatim, in their groups
(interval kept) and in their order.

The hand-written tests run on the rule files the generator writes now (`generated`, from
gen/writer.render), not on the copies committed beside them: a changed generator is judged on what
it writes (and `specwatch generate --check` holds the committed copies equal to it).

Under mutation testing (tools/mutate.py, MUTATION_TESTING set) a promtool test runs only the cases
that reach a rule the mutant changed (`changed_rules`): the others read rules byte for byte the
committed ones, which pass every case in the full suite (tools/mutate.py checks the committed
copies are what the generator writes before it starts). Every case of every file runs otherwise.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any, overload

import yaml

from tests.support import MUTATION, ROOT

RULE_FILES = ("alerts/specwatch-recording.rules.yml", "alerts/specwatch-alerts.rules.yml")

NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
ALERT_NAME = re.compile(r'alertname="([A-Za-z0-9_]+)"')


def _reads(expr: str) -> set[str]:
    """The series names an expression reads, alerts named through ALERTS among them."""
    names = set(NAME.findall(expr))
    if "ALERTS" in names:
        names |= set(ALERT_NAME.findall(expr))
    return names


def _roots(test: dict[str, Any]) -> set[str]:
    roots: set[str] = set()
    for case in test["tests"]:
        roots |= {check["alertname"] for check in case.get("alert_rule_test", [])}
        for check in case.get("promql_expr_test", []):
            roots |= _reads(check["expr"])
    return roots


def closure(files: list[dict[str, Any]], roots: set[str]) -> set[str]:
    """The names of the rules `roots` reach, the roots among them."""
    rules = [r for f in files for g in f["groups"] for r in g["rules"]]
    reached, frontier = set(roots), set(roots)
    while frontier:
        found = set()
        for rule in rules:
            if rule.get("record", rule.get("alert")) in frontier:
                # an annotation's template may query recorded series too
                found |= _reads(rule["expr"] + " ".join(rule.get("annotations", {}).values()))
        frontier = found - reached
        reached |= frontier
    return reached


_RENDERED: dict[tuple[object, ...], dict[str, bytes]] = {}


def generated() -> dict[str, bytes]:
    """Every file the generator writes, by its path in the repository, rendered now (on the
    settings the environment gives).

    Rendered once per process and environment: the tests of one process share it. mutmut forks
    each mutant's tests from a process that rendered the original, and names the mutant in
    MUTANT_UNDER_TEST, both in the key; while it learns which tests reach which function
    (MUTANT_UNDER_TEST=stats) every test renders for itself, or only the first would be seen
    reaching the generator."""
    from specwatch.gen.writer import render
    from specwatch.settings import load_settings

    environment = tuple(sorted(i for i in os.environ.items() if i[0].startswith("SPECWATCH_")))
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    key = (os.getpid(), mutant, environment)
    if mutant == "stats":
        return render(load_settings())
    if key not in _RENDERED:
        _RENDERED[key] = render(load_settings())
    return dict(_RENDERED[key])


def _rules(document: dict[str, Any]) -> dict[str, list[Any]]:
    """Each rule's name -> its rules with their group's name and interval, in order."""
    named: dict[str, list[Any]] = {}
    for group in document["groups"]:
        context = (group["name"], group.get("interval"))
        for rule in group["rules"]:
            named.setdefault(rule.get("record", rule.get("alert")), []).append((context, rule))
    return named


# libyaml where PyYAML was built with it (its wheels are): the rule files are large, and
# pure-Python reading takes a second each
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(data: str | bytes) -> Any:
    """YAML read safely, with libyaml where there is one."""
    return yaml.load(data, Loader=_LOADER)


@functools.lru_cache(maxsize=16)
def _generated_file(data: bytes) -> Any:
    """A generated rule file read once per process and content (the promtool tests of one
    mutant each read the same ones), not to be changed."""
    return read_yaml(data)


@functools.cache
def _committed(name: str) -> dict[str, list[Any]]:
    return _rules(read_yaml((ROOT / name).read_bytes()))


def changed_rules(files_now: dict[str, bytes]) -> set[str] | None:
    """Under mutation testing, the names of the rules (recorded series, alerts) whose generated
    form differs from the committed copy, added and dropped ones among them; None otherwise
    (every case runs)."""
    if not MUTATION:
        return None
    changed: set[str] = set()
    for name in RULE_FILES:
        now, committed = _rules(_generated_file(files_now[name])), _committed(name)
        changed |= {
            rule for rule in now.keys() | committed.keys() if now.get(rule) != committed.get(rule)
        }
    return changed


@overload
def pruned(
    test_file: Path, into: Path, files_now: dict[str, bytes] | None = None, changed: None = None
) -> Path: ...
@overload
def pruned(
    test_file: Path, into: Path, files_now: dict[str, bytes] | None, changed: set[str]
) -> Path | None: ...
def pruned(
    test_file: Path,
    into: Path,
    files_now: dict[str, bytes] | None = None,
    changed: set[str] | None = None,
) -> Path | None:
    """A copy of `test_file` under `into`, beside copies of its rule files cut to its closure:
    those `files_now` holds by their path in the repository (`generated`), else those on disk
    beside the test. With `changed` (`changed_rules`), only its cases that reach one of those
    rules, and None where none does."""
    test = read_yaml(test_file.read_text())
    sources = [(name, test_file.parent / name) for name in test["rule_files"]]
    files = [
        _generated_file(path.read_bytes() if files_now is None else files_now[_in_repository(path)])
        for _, path in sources
    ]
    if changed is not None:
        test["tests"] = [
            case for case in test["tests"] if closure(files, _roots({"tests": [case]})) & changed
        ]
        if not test["tests"]:
            return None
    reached = closure(files, _roots(test))
    (into / "tests").mkdir(parents=True, exist_ok=True)
    for (name, _), data in zip(sources, files, strict=True):
        (into / "tests" / name).resolve().write_text(_cut(data, reached))
    copy = into / "tests" / test_file.name
    if changed is None:
        copy.write_text(test_file.read_text())
    else:
        copy.write_text(yaml.safe_dump(test, sort_keys=False, width=10_000))
    return copy


def _in_repository(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def recording_rules_for(expressions: list[str]) -> bytes | None:
    """The recording rules the generator writes now, cut to those `expressions` reach (promtool
    evaluates every rule it loads at every step), in their groups and order; None under mutation
    testing where none of them differs from the committed copy."""
    files_now = generated()
    roots = {name for expr in expressions for name in _reads(expr)}
    document = _generated_file(files_now[RULE_FILES[0]])
    reached = closure([document], roots)
    changed = changed_rules(files_now)
    if changed is not None and not reached & changed:
        return None
    return _cut(document, reached).encode()


def _cut(document: dict[str, Any], reached: set[str]) -> str:
    """A rule file holding only the rules named in `reached`, verbatim, in their groups
    (interval kept) and order; groups left empty dropped."""
    groups = []
    for group in document["groups"]:
        rules = [r for r in group["rules"] if r.get("record", r.get("alert")) in reached]
        if rules:
            groups.append({**group, "rules": rules})
    return yaml.safe_dump({"groups": groups}, sort_keys=False)
