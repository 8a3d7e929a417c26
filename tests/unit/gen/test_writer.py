"""How the generated files are written: readable, deterministic YAML, and only what changed
rewritten (`specwatch generate`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from specwatch.gen.dashboards import panel_queries
from specwatch.gen.writer import HEADER, stale, write, yaml_document


def test_a_document_says_it_is_generated_sorts_its_keys_and_keeps_promql_readable() -> None:
    expr = "sum by (model) (\n  rate(x[5m])\n)"
    long = " ".join(["word"] * 80)  # one line however long: a wrapped one reads as two
    data = {"zeta": 1, "alpha": {"expr": expr, "long": long, "dash": "0.42–0.58"}}
    text = yaml_document(data).decode()
    assert text.startswith(f"# {HEADER}\n")
    assert (
        [
            "alpha:",
            "  dash: 0.42–0.58",  # as written, not escaped
            "  expr: |-",  # a block: each line of the expression a line of the file
            "    sum by (model) (",
            "      rate(x[5m])",
            "    )",
            f"  long: {long}",
            "zeta: 1",
        ]
        == text.splitlines()[1:]
    )
    assert data == yaml.safe_load(text)


def test_generate_rewrites_only_the_missing_and_the_stale(tmp_path: Path) -> None:
    files = {"a/one.yml": b"one\n", "b/two.json": b"{}\n", "three.txt": b"3\n"}
    assert sorted(files) == stale(files, tmp_path)
    assert sorted(tmp_path / name for name in files) == write(files, tmp_path)
    assert [] == stale(files, tmp_path)
    assert [] == write(files, tmp_path)  # up to date: nothing touched
    (tmp_path / "b/two.json").write_bytes(b"{stale}\n")
    (tmp_path / "three.txt").unlink()
    assert ["b/two.json", "three.txt"] == stale(files, tmp_path)
    assert [tmp_path / "b/two.json", tmp_path / "three.txt"] == write(files, tmp_path)
    assert all((tmp_path / name).read_bytes() == data for name, data in files.items())


def test_a_dashboards_queries_skip_rows_and_panels_without_one() -> None:
    document: dict[str, Any] = {
        "panels": [
            {"title": "a row", "type": "row"},
            {"title": "text", "targets": [{"refId": "A"}]},
            {"title": "rate", "targets": [{"expr": "rate(x[5m])"}, {"expr": "y"}]},
        ]
    }
    assert [("rate", "rate(x[5m])"), ("rate", "y")] == panel_queries(document)
    document["annotations"] = {"list": [{"name": "builtin"}, {"name": "drift", "expr": "z"}]}
    assert ("annotation: drift", "z") == panel_queries(document)[-1]
    assert [] == panel_queries({})
