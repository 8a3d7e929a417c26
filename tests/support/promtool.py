"""A hand-written promtool test run on the rules it can reach, not on all of them.

promtool evaluates every rule of the files a test loads at every step of its cases: with ~400
recording rules, a case of 400 simulated minutes costs minutes of CPU, almost all of it on rules
whose inputs the case never writes. An alert depends only on the rules its expression and its
annotations' queries read, and theirs in turn; the rest cannot change what it says. So each test
runs on a copy of the generated files holding that closure, rules verbatim, in their groups
(interval kept) and in their order.

The hand-written tests run on the rule files the generator writes now (`generated`, from
gen/writer.render), not on the copies committed beside them: a changed generator is judged on what
it writes (and `specwatch generate --check` holds the committed copies equal to it). Never cached:
a mutation run (tools/mutate.py) forks each mutant from a process that has rendered them once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.support import ROOT

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


def generated() -> dict[str, bytes]:
    """Every file the generator writes, by its path in the repository, rendered now."""
    from specwatch.gen.writer import render
    from specwatch.settings import load_settings

    return render(load_settings())


def pruned(test_file: Path, into: Path, files_now: dict[str, bytes] | None = None) -> Path:
    """A copy of `test_file` under `into`, beside copies of its rule files cut to its closure:
    those `files_now` holds by their path in the repository (`generated`), else those on disk
    beside the test."""
    test = yaml.safe_load(test_file.read_text())
    sources = [(name, test_file.parent / name) for name in test["rule_files"]]
    files = [
        yaml.safe_load(path.read_text() if files_now is None else files_now[_in_repository(path)])
        for _, path in sources
    ]
    reached = closure(files, _roots(test))
    (into / "tests").mkdir(parents=True, exist_ok=True)
    for (name, _), data in zip(sources, files, strict=True):
        groups = []
        for group in data["groups"]:
            rules = [r for r in group["rules"] if r.get("record", r.get("alert")) in reached]
            if rules:
                groups.append({**group, "rules": rules})
        target = (into / "tests" / name).resolve()
        target.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    copy = into / "tests" / test_file.name
    copy.write_text(test_file.read_text())
    return copy


def _in_repository(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()
