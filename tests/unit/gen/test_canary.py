"""The canary's alerts as written (gen/canary.py): which severity each case gets, and the
family-wise quantile its bounds are drawn at."""

from __future__ import annotations

import re
from statistics import NormalDist

import pytest
from specwatch.gen.canary import FAMILY_STEPS, canary_alert, family_z
from specwatch.settings import load_settings

SAME = "and on(baseline_config, speculation) label_replace("
OTHER = "unless on(baseline_config, speculation) label_replace("


def test_a_worse_canary_pages_where_the_configs_speculate_alike_and_warns_where_not() -> None:
    """Acceptance is the whole story only where canary and stable speculate alike (or what they
    run is unknown): that rule is critical. Where they differ goodput decides: a warning."""
    by_severity = {severity: expr for severity, expr, _ in canary_alert(load_settings()).rules()}
    assert {"critical", "warning"} == set(by_severity)
    assert SAME in by_severity["critical"]
    assert OTHER not in by_severity["critical"]
    assert OTHER in by_severity["warning"]
    assert SAME not in by_severity["warning"]
    # a config whose info is missing counts as speculating alike: in the critical rule only
    assert "unless on(config) max by (config, speculation)" in by_severity["critical"]


def family_z_at(expr: str, count: int) -> float:
    """The family quantile's PromQL (a sum of `(c > bool a) * (c <= bool b) * z` terms, the
    last without an upper bound) evaluated in Python for a family of `count`."""
    total = 0.0
    for term in expr.split("\n+ "):
        bounds = re.findall(r"\(c (>|<=) bool ([0-9.e+]+)\)", term)
        z = float(term.rsplit("* ", 1)[1])
        held = all(count > float(b) if op == ">" else count <= float(b) for op, b in bounds)
        total += z if held else 0.0
    return total


@pytest.mark.parametrize("confidence", [0.95, 0.99])
def test_the_family_quantile_is_bonferronis_at_the_step_above_the_familys_size(
    confidence: float,
) -> None:
    """Exact Bonferroni at the step sizes, the next step's above them (never narrower than the
    family's own), and a million comparisons' past the last step."""
    expr = family_z(count="c", confidence=confidence)

    def bonferroni(m: float) -> float:
        return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / (2.0 * m))

    for count in range(1, 1100):
        step = next((m for m in FAMILY_STEPS if m >= count), 1e6)
        assert family_z_at(expr, count) == pytest.approx(bonferroni(step), rel=1e-12), count
        assert family_z_at(expr, count) >= bonferroni(count) - 1e-12
    assert family_z_at(expr, 5_000_000) == pytest.approx(bonferroni(1e6), rel=1e-12)
    assert 0.0 == family_z_at(expr, 0)  # no family: nothing compared
