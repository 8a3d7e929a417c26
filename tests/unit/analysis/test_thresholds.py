"""The zone settings as the rules read them (analysis/verdicts/thresholds.py): each field the
settings', each bar the one its threshold names."""

from __future__ import annotations

from specwatch.analysis.verdicts.thresholds import Thresholds
from specwatch.settings import ZoneSettings


def test_every_field_and_bar_is_the_settings_own() -> None:
    settings = ZoneSettings(
        green=0.71, red=0.33, indifference=0.04, change_evidence=7.5, collapse_margin=0.06,
        exit_margin=0.02, exit_evaluations=5, min_dwell_seconds=123.0, min_trials=456,
        min_requests=17, slower_seconds=89.0,
    )  # fmt: skip
    found = Thresholds(settings)
    for name in ("green", "red", "indifference", "change_evidence", "collapse_margin",
                 "exit_margin", "exit_evaluations", "min_dwell_seconds", "min_trials",
                 "min_requests", "slower_seconds"):  # fmt: skip
        assert getattr(settings, name) == getattr(found, name), name
    for threshold in ("green", "red"):
        assert settings.bar(threshold) == found.bar(threshold)
        assert settings.exit_bar(threshold) == found.exit_bar(threshold)
    assert found.bar("green") != found.bar("red")
    assert found.exit_bar("green") != found.exit_bar("red")
