"""The canary's alerts as written (gen/canary.py): which severity each case gets."""

from __future__ import annotations

from specwatch.gen.canary import canary_alert
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
