from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from specwatch.analysis.drift.detector import DriftDetector
from specwatch.core.records import SliceKey
from specwatch.settings import DriftSettings, load_settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.store.state import StateFile
from structlog.testing import capture_logs

KEY = SliceKey("m", "0-512", "code")


def fed_detector(minutes: int) -> DriftDetector:
    detector = DriftDetector(DriftSettings())
    rng = random.Random(5)
    for minute in range(minutes):
        n = 600
        detector.add(KEY, minute * 60.0, sum(rng.random() < 0.7 for _ in range(n)), n)
        detector.evaluate((minute + 1) * 60.0)
    return detector


def test_the_drift_state_round_trips_through_the_state_file(tmp_path: Path) -> None:
    detector = fed_detector(90)
    store = StateFile(tmp_path, "drift")
    store.save(detector.to_state(), now=5400.0)
    again = DriftDetector(DriftSettings())
    again.load_state(store.load(now=5460.0, max_age=3600.0))
    assert detector.to_state() == again.to_state()
    assert detector.view(KEY) == again.view(KEY)
    assert [] == [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_missing_stale_and_corrupt_state_each_give_one_line_and_a_fresh_start(
    tmp_path: Path,
) -> None:
    settings = load_settings(state_dir=str(tmp_path), port=0, admin_port=0)
    path = tmp_path / "drift.json"
    cases = {
        "missing": None,
        "stale": b'{"saved_at": 0, "state": {}}',
        "corrupt json": b'{"saved_at": 1e12, "sta',
        "corrupt state": b'{"saved_at": 1e12, "state": {"version": 1, "slices": [{"key": 3}]}}',
    }
    for name, content in cases.items():
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(content)
        car = Sidecar(settings, clock=lambda: 1e12)
        with capture_logs() as logs:
            car.states.restore_drift()
        fresh = [entry for entry in logs if entry["event"] == "state_fresh"]
        assert 1 == len(fresh), name
        assert car.analyzer.drift_state()["slices"] == [], name


def test_a_saved_sidecar_state_is_restored_on_start(tmp_path: Path) -> None:
    settings = load_settings(state_dir=str(tmp_path), port=0, admin_port=0)
    detector = fed_detector(30)
    StateFile(tmp_path, "drift").save(detector.to_state(), now=1000.0)
    car = Sidecar(settings, clock=lambda: 1100.0)
    with capture_logs() as logs:
        car.states.restore_drift()
    assert ["state_restored"] == [entry["event"] for entry in logs]
    assert detector.to_state() == car.analyzer.drift_state()


def test_a_state_saved_before_buckets_kept_request_sizes_loads_without_them() -> None:
    """Version 2 saved [index, accepted, trials] per bucket; it loads as if every trial were
    its own request and step, and a bucket of any other length is refused."""
    state = fed_detector(90).to_state()
    old = {**state, "version": 2}
    old["slices"] = [
        {**item, "buckets": [bucket[:3] for bucket in item["buckets"]]} for item in state["slices"]
    ]
    again = DriftDetector(DriftSettings())
    again.load_state(old)
    (item,) = again.to_state()["slices"]
    assert [[i, a, n, n, n] for i, a, n in old["slices"][0]["buckets"]] == item["buckets"]
    for bad in ([1, 2, 3, 4], [1, 2, 3, 9, 0], [1, -2, 3]):
        broken = {**state, "slices": [{**state["slices"][0], "buckets": [bad]}]}
        with pytest.raises(ValueError, match="malformed drift state"):
            again.load_state(broken)


def wandering_detector() -> DriftDetector:
    """Acceptance wandering around 0.7 for 200 minutes, then down to 0.4: a level tracked, an
    alarm raised and still on."""
    detector = DriftDetector(DriftSettings())
    rng, p = random.Random(5), 0.7
    for minute in range(240):
        p = 0.4 if minute > 200 else min(0.9, max(0.5, p + rng.gauss(0, 0.01)))
        detector.add(KEY, minute * 60.0, sum(rng.random() < p for _ in range(600)), 600)
        detector.evaluate((minute + 1) * 60.0)
    return detector


def test_every_field_of_a_slices_drift_survives_the_round_trip() -> None:
    """No field left at its default (a level, its variance, a run, an alarm since a time, one
    raised): each comes back as it was saved."""
    state = wandering_detector().to_state()
    (item,) = state["slices"]
    assert item["level"] != 0.0
    assert item["level_variance"] > 0.0
    assert item["statistic"] is not None
    assert item["processed"] is not None
    assert (True, 1) == (item["alarm"], item["alarms_raised"])
    assert item["alarm_since"] is not None
    assert 0 < item["run"][0] < item["run"][1]
    again = DriftDetector(DriftSettings())
    again.load_state(state)
    assert state == again.to_state()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"version": 99}, "not a drift state of this version"),
        ({"bucket_seconds": 1.0}, "saved with another bucket length"),
    ],
)
def test_a_state_of_another_version_or_bucket_length_is_refused_saying_which(
    change: dict[str, object], said: str
) -> None:
    state = {**wandering_detector().to_state(), **change}
    with pytest.raises(ValueError, match=f"^{said}$"):
        DriftDetector(DriftSettings()).load_state(state)
    with pytest.raises(ValueError, match=r"^not a drift state of this version$"):
        DriftDetector(DriftSettings()).load_state([state])


@pytest.mark.parametrize(
    ("bucket", "said"),
    [
        ([1, 2, 3, 4], "a bucket has three or five numbers"),
        ([1, -2, 3], "a bucket's counts are not negative, and its trials come from steps"),
        ([1, 2, -3, 3, 1], "a bucket's counts are not negative, and its trials come from steps"),
        ([1, 2, 3, -3, 1], "a bucket's counts are not negative, and its trials come from steps"),
        ([1, 2, 3, 3, -1], "a bucket's counts are not negative, and its trials come from steps"),
        ([1, 2, 3, 3, 0], "a bucket's counts are not negative, and its trials come from steps"),
    ],
)
def test_each_malformed_bucket_is_refused_saying_why(bucket: list[int], said: str) -> None:
    state = fed_detector(30).to_state()
    broken = {**state, "slices": [{**state["slices"][0], "buckets": [bucket]}]}
    whole = f"malformed drift state: ValueError({said!r})"
    with pytest.raises(ValueError, match=f"^{re.escape(whole)}$"):
        DriftDetector(DriftSettings()).load_state(broken)


def test_a_first_version_state_without_the_later_fields_loads_them_at_zero() -> None:
    """Version 1: no level, level variance or alarms raised, buckets of three numbers; a
    bucket of nothing and one of a single step are counts too."""
    state = fed_detector(30).to_state()
    item = {k: v for k, v in state["slices"][0].items()
            if k not in ("level", "level_variance", "alarms_raised")}  # fmt: skip
    item["buckets"] = [[0, 0, 0], [1, 1, 1, 1, 1], *(b[:3] for b in item["buckets"][2:])]
    again = DriftDetector(DriftSettings())
    again.load_state({**state, "version": 1, "slices": [item]})
    (loaded,) = again.to_state()["slices"]
    assert (0.0, 0.0, 0) == (loaded["level"], loaded["level_variance"], loaded["alarms_raised"])
    assert [[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]] == loaded["buckets"][:2]
