"""The documented metric and alert tables are those of conventions/metrics.py and the rules."""

from __future__ import annotations

import re

import yaml
from specwatch import conventions as C

from tests.support import ROOT


def readme_metrics() -> dict[str, tuple[str, set[str]]]:
    """name -> (type, labels shown in braces) from the metrics table of docs/metrics.md."""
    text = (ROOT / "docs" / "metrics.md").read_text()
    table = text[text.index("| metric | type | meaning |") :].split("\n\n", 1)[0]
    out: dict[str, tuple[str, set[str]]] = {}
    for row in table.splitlines()[2:]:
        names, kind = [cell.strip() for cell in row.strip("|").split("|")][:2]
        for name, labels in re.findall(r"`(specwatch_\w+)(?:\{([\w,]+)\})?`", names):
            out[name] = (kind, set(labels.split(",")) if labels else set())
    return out


def test_the_readme_lists_every_metric_of_the_table_and_no_other() -> None:
    shown = readme_metrics()
    table = {metric.exposed: metric for metric in C.METRICS.values()}
    assert set(table) == set(shown)
    for name, (kind, labels) in shown.items():
        metric = table[name]
        assert metric.kind == kind, name
        assert labels <= set(metric.labels), name  # the README names the labels beyond the slice


def test_every_relative_link_of_the_docs_points_inside_the_repository() -> None:
    documents = [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *ROOT.glob("tests/fixtures/*/README.md"),
    ]
    inside = ROOT.resolve()  # the repository stands alone: nothing leads out of it
    checked = 0
    for document in documents:
        text = document.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if "://" in target:
                continue
            assert (document.parent / target).exists(), (document.name, target)
            assert (document.parent / target).resolve().is_relative_to(inside), target
            checked += 1
        for path in re.findall(r"(?:\.\./)+[\w.-]*", text):  # a relative path in the prose
            assert (document.parent / path).resolve().is_relative_to(inside), (document.name, path)
    assert checked >= 5


def readme_alerts() -> dict[str, str]:
    """alert -> severity from the README's alerts table (`A` / `B` | sev / sev: in order; one
    alert with `sev / sev`: its rules' severities, in order)."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| alert | severity | fires when |") :].split("\n\n", 1)[0]
    out: dict[str, str] = {}
    for row in table.splitlines()[2:]:
        names_cell, severity_cell = [cell.strip() for cell in row.strip("|").split("|")][:2]
        names = re.findall(r"`(SpecDecode\w+)`", names_cell)
        severities = [part.strip() for part in severity_cell.split("/")]
        if len(names) == 1:
            severities = [" / ".join(severities)]
        elif len(severities) == 1:
            severities *= len(names)
        assert len(names) == len(severities), row
        out.update(zip(names, severities, strict=True))
    return out


def test_the_readmes_alerts_table_is_the_generated_rules_alert_for_alert() -> None:
    rules = yaml.safe_load((ROOT / "alerts" / "specwatch-alerts.rules.yml").read_text())
    severities: dict[str, list[str]] = {}
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                severities.setdefault(rule["alert"], []).append(rule["labels"]["severity"])
    generated = {name: " / ".join(each) for name, each in severities.items()}
    assert generated == readme_alerts()


def test_every_document_named_in_code_build_and_docs_is_in_the_repository() -> None:
    """A `*.md` named in the package, the tools, the tests, the benchmarks, the Makefile or the
    docs exists here: the repository stands alone (a reference to a file beside it once sent
    readers to a document they did not have)."""
    sources = [ROOT / "Makefile", *(ROOT / "docs").rglob("*.md"), *(ROOT / "docs").rglob("*.sh")]
    for folder in ("agent", "tools", "tests", "benchmarks"):
        sources += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".sh"}]
    known = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    missing = set()
    for source in sources:
        for name in re.findall(r"(?<![\w.*/-])([\w./-]*[A-Za-z]\w*\.md)\b", source.read_text()):
            beside = (source.parent / name).resolve()
            if beside.is_file() and beside.is_relative_to(ROOT.resolve()):
                continue
            if not any(path == name or path.endswith("/" + name) for path in known):
                missing.add((source.relative_to(ROOT).as_posix(), name))
    assert set() == missing


def test_the_readme_stays_an_operators_page() -> None:
    """It grew back to 413 lines once (#62): what an operator needs, the rest in docs/."""
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 380, f"README.md has {lines} lines: move detail to docs/ with a pointer"
