"""A window's evidence compared and printed (analysis/verdicts/evidence.py), and the change
ratio between two stretches at its gates: what a failing test shows, and no evidence from a
stretch of one request."""

from __future__ import annotations

import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.verdicts.evidence import (
    Evidence,
    WindowEvidence,
    _change,
    _design_effect,
    _widening,
    change_ratio,
    gathered,
)
from specwatch.analysis.verdicts.evidence_windows import EvidenceWindows
from specwatch.analysis.verdicts.thresholds import Thresholds
from specwatch.settings import ZoneSettings

SOME = Sums(10, 70, 100, 500, 700, 1000)


def window(seconds: float = 300.0, red: float = -2.0) -> WindowEvidence:
    return WindowEvidence(seconds, True, 1.5, red, SOME, ((1800.0, 0.25),), 1.0, -1.0)


def test_a_windows_evidence_is_equal_figure_by_figure_and_prints_each_by_name() -> None:
    assert window() == window()
    assert window() != window(red=-2.5)
    assert window() != window(seconds=600.0)
    assert window() != "WindowEvidence"
    assert repr(window()) == (
        "WindowEvidence(seconds=300.0, full=True, green=1.5, red=-2.0, "
        f"sums={SOME!r}, changes=((1800.0, 0.25),), green_exit=1.0, red_exit=-1.0)"
    )
    assert Evidence((window(),), 3.0) == Evidence((window(),), 3.0)
    assert Evidence((window(),), 3.0) != Evidence((window(),), 4.0)
    assert Evidence((window(),), 3.0) != Evidence((window(red=-1.0),), 3.0)
    assert Evidence((window(),), 3.0) != window()


def test_the_change_ratio_needs_two_requests_on_the_newer_side() -> None:
    newer, older = Sums(2, 2, 10, 2, 10, 50), Sums(10, 70, 100, 500, 700, 1000)
    found = change_ratio(newer, older, 0.99)
    assert found > 0.0
    assert found == pytest.approx(_change(newer, _design_effect(newer), older, 0.99))
    assert 0.0 == change_ratio(Sums(1, 1, 5, 1, 5, 25), older, 0.99)
    assert 0.0 == change_ratio(Sums(2, 0, 0, 0, 0, 0), older, 0.99)


def test_decode_sums_are_equal_on_every_field_the_load_and_steps_included() -> None:
    one, same, other_load = DecodeSums(), DecodeSums(), DecodeSums()
    for sums, load in ((one, 2.0), (same, 2.0), (other_load, 3.0)):
        sums.add_request(1.0, 10.0, load, 4.0)
    assert one == same
    assert one != other_load  # the same seconds and tokens, another load
    assert one != Sums(1, 1.0, 10.0, 1.0, 10.0, 100.0)  # the plain sums of the same request
    assert repr(one).startswith("DecodeSums(1, 1.0, 10.0")


def test_the_change_ratio_by_hand() -> None:
    """(p1 - p2)^2 / (2 (v1 + v2)), each v = design effect x widening x p (1 - p) / trials at
    the pooled p: newer 6 requests of 10 trials accepting 1, 9, 2, 8, 5, 5; older 20 accepting
    7 or 8. 0 below two requests on either side or without trials, and where the pooled p
    leaves no spread."""
    newer, older = Sums(6, 30, 60, 200, 300, 600), Sums(20, 150, 200, 1130, 1500, 2000)
    pooled = (30 + 150) / (60 + 200)
    spread = pooled * (1 - pooled)
    v_new = _design_effect(newer) * _widening(6, 2.0) * spread / 60
    v_old = _design_effect(older) * _widening(20, 2.0) * spread / 200
    want = (30 / 60 - 150 / 200) ** 2 / (2 * (v_new + v_old))
    assert change_ratio(newer, older, 2.0) == pytest.approx(want, rel=1e-12)
    assert _design_effect(newer) > 1.0  # the requests differ: the effect is in the sum
    assert 0.0 == change_ratio(newer, Sums(1, 5, 10, 25, 50, 100), 2.0)
    assert 0.0 == change_ratio(newer, Sums(2, 0, 0, 0, 0, 0), 2.0)
    assert 0.0 == change_ratio(Sums(2, 20, 20, 200, 200, 200), Sums(2, 10, 10, 50, 50, 50), 2.0)


def test_a_window_of_one_bucket_holds_the_newest_bucket_alone_after_a_seal() -> None:
    """Windows of 10 s and 30 s in buckets of 10: read at 0 (the 10 s window's edge is bucket
    0), a record at 10 seals bucket 0 into both; read at 10, the 10 s window holds bucket 1
    alone, the 30 s window both."""
    windows: EvidenceWindows[str] = EvidenceWindows((10.0, 30.0), bucket=10.0)
    first, second = Counts.of_request((3,) * 4, (2,) * 4, 4), Counts.of_request((3,), (1,), 4)
    windows.add("s", 0.0, first)
    windows.read("s", 0.0, "alpha")
    windows.add("s", 10.0, second)
    (short, short_sums), (long, long_sums) = windows.read("s", 10.0, "alpha")
    assert (10.0, 30.0) == (short, long)
    assert Sums.of(second, "alpha") == short_sums
    both = first.copy()
    both.merge(second)
    assert (both.accepted, both.trials) == (long_sums.x, long_sums.y)


def test_a_bucket_sums_every_record_it_gets_for_either_metric_and_a_late_one_where_held() -> None:
    """Three requests into one open bucket, then the next bucket, one late record for the
    first bucket and one older than the longest window: each window's alpha and rate sums are
    those of the counts merged by hand, the too-old one left out."""
    windows: EvidenceWindows[str] = EvidenceWindows((10.0, 30.0), bucket=10.0)
    parts = [Counts.of_request((3,) * n, (n % 4,) * n, 4) for n in (2, 3, 5)]
    for part in parts:
        windows.add("s", 20.0, part)
    newer = Counts.of_request((4, 4), (1, 4), 4)
    windows.add("s", 30.0, newer)
    late = Counts.of_request((3,), (2,), 4)
    windows.add("s", 25.0, late)
    windows.add("s", -100.0, Counts.of_request((3,), (3,), 4))  # past every window: dropped
    held = Counts(4)
    for part in (*parts, newer, late):
        held.merge(part)
    (_, alpha), (_, long_alpha) = windows.read("s", 30.0, "alpha")
    assert Sums.of(newer, "alpha") == alpha
    assert Sums.of(held, "alpha") == long_alpha
    (_, rate), (_, long_rate) = windows.read("s", 30.0, "rate")
    assert Sums.of(newer, "rate") == rate
    assert Sums.of(held, "rate") == long_rate


def test_a_window_exactly_at_half_the_gates_is_kept_and_one_below_is_not() -> None:
    """Gates of 100 trials and 10 requests: a window of 50 trials and 5 requests is kept (to
    keep a verdict, not to enter one), one of 49 trials or of 4 requests is not; the evidence
    carries the zones' change bar."""
    cfg = Thresholds(ZoneSettings(min_trials=100, min_requests=10))

    def alike(requests: int, trials: int) -> Sums:
        return Sums(requests, trials // 2, trials, 0, 0, 0)

    found = gathered([(300.0, alike(5, 50))], cfg, entering=False)
    assert found is not None
    assert ([300.0], [False]) == (
        [w.seconds for w in found.windows],
        [w.full for w in found.windows],
    )
    assert cfg.change_evidence == found.change_bar
    assert gathered([(300.0, alike(5, 50))], cfg, entering=True) is None
    for short in (alike(5, 49), alike(4, 50)):
        assert gathered([(300.0, short)], cfg, entering=False) is None
