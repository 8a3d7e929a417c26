"""`specwatch snapshot`'s errors (the rendering itself is tested against a real Prometheus in
tests/e2e/test_dashboards.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from specwatch.commands.snapshot import SnapshotError, render_snapshot
from specwatch.settings import load_settings


def test_a_prometheus_out_of_reach_is_named_not_its_whole_query(tmp_path: Path) -> None:
    """The error once quoted the query URL, ~600 characters of escaped PromQL."""
    with pytest.raises(SnapshotError) as error:
        render_snapshot("http://127.0.0.1:1", tmp_path / "x.png", load_settings(), ".*", 5)
    assert str(error.value).startswith("cannot query Prometheus at 'http://127.0.0.1:1': ")
    assert "query_range" not in str(error.value)
    assert len(str(error.value)) < 200


def test_legends_name_the_track_and_config_a_series_carries() -> None:
    from specwatch.commands.snapshot import _named

    labels = {"model": "tiny", "track": "canary", "config": "c1"}
    assert "rate tiny (canary c1)" == _named(labels, "rate tiny")
    assert "rate tiny" == _named({"model": "tiny"}, "rate tiny")
