"""PromQL templates (gen/template.py): a hole left open or a name without a hole is refused."""

from __future__ import annotations

import pytest
from specwatch.conventions import Label
from specwatch.gen.template import PromQL, Recording, TemplateError, group

RATIO = PromQL("""
    sum by (${by}) (rate(${numerator}[5m]))
    / sum by (${by}) (rate(${denominator}[5m]))
""")


def test_every_hole_is_filled_by_name_and_the_layout_kept() -> None:
    expr = RATIO(by="model", numerator="a_total", denominator="b_total")
    assert expr == "sum by (model) (rate(a_total[5m]))\n/ sum by (model) (rate(b_total[5m]))"
    assert RATIO.holes == {"by", "numerator", "denominator"}


def test_a_hole_left_open_is_refused() -> None:
    with pytest.raises(TemplateError, match=r"holes left open \['denominator'\]"):
        RATIO(by="model", numerator="a_total")


def test_a_misspelt_name_is_refused() -> None:
    with pytest.raises(TemplateError, match=r"names without a hole \['denominatr'\]"):
        RATIO(by="model", numerator="a_total", denominator="b_total", denominatr="c_total")


def test_label_replace_references_and_selectors_are_no_holes() -> None:
    template = PromQL('label_replace(${series}{track="stable"}, "to", "$1", "from", "(.*)")')
    assert template.holes == {"series"}
    assert template(series="x") == 'label_replace(x{track="stable"}, "to", "$1", "from", "(.*)")'


def test_a_recording_is_written_as_prometheus_reads_it() -> None:
    plain = Recording("level:metric:op5m", "a\n/ b")
    labelled = Recording("level:metric:op5m", "a", {Label.THRESHOLD.value: "red"})
    assert group("g", [plain, labelled]) == {
        "name": "g",
        "rules": [
            {"record": "level:metric:op5m", "expr": "a\n/ b"},
            {"record": "level:metric:op5m", "expr": "a", "labels": {"threshold": "red"}},
        ],
    }


def test_an_expression_nested_whole_keeps_its_layout_where_asked() -> None:
    outer = PromQL(
        """
        label_replace(
          ${expr},
          "to", "$1", "from", "(.*)"
        )
        """,
        indent=True,
    )
    assert outer(expr="a\n/ b") == 'label_replace(\n  a\n  / b,\n  "to", "$1", "from", "(.*)"\n)'
    assert PromQL("(\n  ${expr}\n)")(expr="a\n/ b") == "(\n  a\n/ b\n)"  # plain: as given
