"""`zone_changed`, the log line an operator reads a verdict from (analysis/verdicts/zones.py,
`log_change`): every field, each rounded as said, the window that decided named with its own
interval, requests and trials."""

from __future__ import annotations

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import Interval, proportion_interval
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.speed.speedup import Gain
from specwatch.analysis.verdicts.evidence import Evidence, WindowEvidence
from specwatch.analysis.verdicts.zones import ZoneChange, log_change
from specwatch.core.records import SliceKey
from structlog.testing import capture_logs

HOUR = Sums(40, 2000, 4000, 110_000, 200_000, 400_000)
SHORT = Sums(12, 700, 1000, 45_000, 60_000, 90_000)


def evidence() -> Evidence:
    return Evidence(
        (
            WindowEvidence(300.0, True, 1.23456, -2.34567, SHORT, (), 1.0, -1.0),
            WindowEvidence(3600.0, False, 0.5, -0.25, HOUR, (), 0.5, -0.25),
        ),
        3.0,
    )


def logged(change: ZoneChange, gain: Gain | None, found: Evidence | None) -> dict[str, object]:
    counts = Counts.of_request((3,) * 10, (2,) * 10, 4)
    interval = Interval(0.712345, 0.612345, 0.812345, design_effect=1.23456)
    with capture_logs() as logs:
        log_change(
            SliceKey("m", "0-512", "chat"), 120.0, change, "alpha", interval, found, counts,
            "proxy", gain, 0.95,
        )  # fmt: skip
    (entry,) = logs
    return dict(entry)


def test_a_zone_change_is_logged_with_every_field_rounded_as_said() -> None:
    gain = Gain(1.234567, "measured", 1.123456, 1.345678)
    entry = logged(ZoneChange("green", "red", 3600.0), gain, evidence())
    n, x, y, xx, xy, yy = HOUR
    hour = proportion_interval(n, x, y, xx, xy, yy, 0.95)
    assert hour is not None
    assert {
        "event": "zone_changed",
        "log_level": "info",
        "model": "m",
        "ctx_bucket": "0-512",
        "task": "chat",
        "at": 120.0,
        "previous": "green",
        "zone": "red",
        "metric": "alpha",
        "estimate": 0.7123,
        "lower": 0.6123,
        "upper": 0.8123,
        "window_trials": 30,  # 10 steps accepting 2 of 3: 3 trials each
        "window_requests": 1,
        "source": "proxy",
        "gain": 1.235,
        "gain_lower": 1.123,
        "gain_upper": 1.346,
        "gain_method": "measured",
        "design_effect": 1.23,
        "evidence": [[300.0, True, 1.23, -2.35], [3600.0, False, 0.5, -0.25]],
        "decided_by": {
            "seconds": 3600.0,
            "estimate": round(hour.estimate, 4),
            "lower": round(hour.lower, 4),
            "upper": round(hour.upper, 4),
            "requests": 40,
            "trials": 4000,
        },
    } == entry


def test_without_a_gain_evidence_or_deciding_window_those_fields_are_empty() -> None:
    entry = logged(ZoneChange("insufficient", "yellow", None), None, evidence())
    assert (None, None, None, None, None) == (
        entry["gain"],
        entry["gain_lower"],
        entry["gain_upper"],
        entry["gain_method"],
        entry["decided_by"],
    )
    assert logged(ZoneChange("red", "insufficient", 300.0), None, None)["evidence"] is None
    # a deciding window no longer among the evidence's: none named
    assert logged(ZoneChange("green", "red", 1800.0), None, evidence())["decided_by"] is None
