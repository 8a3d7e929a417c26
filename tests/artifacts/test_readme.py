"""The README's metric table is the metric table of conventions/metrics.py, name for name."""

from __future__ import annotations

import re

from specwatch import conventions as C

from tests.support import ROOT


def readme_metrics() -> dict[str, tuple[str, set[str]]]:
    """name -> (type, labels shown in braces) from the README's Metrics table."""
    text = (ROOT / "README.md").read_text()
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
