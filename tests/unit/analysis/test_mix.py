from __future__ import annotations

import math

import pytest
from specwatch.analysis.drift.mix import decompose, psi, shares


def test_psi_by_hand() -> None:
    # (0.7 - 0.5) ln(0.7 / 0.5) + (0.3 - 0.5) ln(0.3 / 0.5)
    assert pytest.approx(0.169459, abs=1e-6) == psi({"a": 0.5, "b": 0.5}, {"a": 0.7, "b": 0.3})
    assert 0.0 == psi({"a": 0.4, "b": 0.6}, {"a": 0.4, "b": 0.6})


def test_shares_of_weights() -> None:
    assert {"x": 0.25, "y": 0.75} == shares({"x": 1, "y": 3})


def test_overall_acceptance_falls_while_every_slice_improves_simpson() -> None:
    # baseline: mostly short context (alpha 0.80) and some long (0.40); recent: mostly long
    base = {"short": (6400, 8000), "long": (800, 2000)}
    recent = {"short": (2460, 3000), "long": (3150, 7000)}
    d = decompose(base, recent)
    assert d is not None
    assert recent["short"][0] / recent["short"][1] > base["short"][0] / base["short"][1]
    assert recent["long"][0] / recent["long"][1] > base["long"][0] / base["long"][1]
    assert pytest.approx(0.72) == d.alpha_base
    assert pytest.approx(0.561) == d.alpha_recent
    assert pytest.approx(-0.2) == d.mix  # (0.3 - 0.8) 0.8 + (0.7 - 0.2) 0.4
    assert pytest.approx(0.041) == d.rate  # 0.3 (0.82 - 0.8) + 0.7 (0.45 - 0.4)
    assert pytest.approx(d.total) == d.mix + d.rate


def test_slices_present_in_one_period_only_keep_the_identity() -> None:
    d = decompose({"a": (50, 100)}, {"a": (30, 50), "b": (45, 50)})
    assert d is not None
    assert pytest.approx(d.total) == d.mix + d.rate
    assert decompose({}, {"a": (1, 2)}) is None


def test_a_slice_new_in_the_recent_period_is_all_mix_and_one_gone_takes_its_share_away() -> None:
    """Base: a (50 of 100), c (20 of 100); recent: a (30 of 50), b (45 of 50) new. b: weight
    1/2 at its own rate 0.9, all mix; c: weight 1/2 gone at 0.2; a: 1/2 -> 1/2 at 0.5 -> 0.6."""
    d = decompose({"a": (50, 100), "c": (20, 100)}, {"a": (30, 50), "b": (45, 50)})
    assert d is not None
    assert d.mix == pytest.approx(0.5 * 0.9 - 0.5 * 0.2)
    assert d.rate == pytest.approx(0.5 * (0.6 - 0.5))
    assert d.alpha_base == pytest.approx(0.35)
    assert d.alpha_recent == pytest.approx(0.75)


def test_psi_floors_a_share_one_side_does_not_have() -> None:
    """a only in the base (0.5 against the floor 1e-4), b only in the recent period."""
    floor = 1e-4
    want = (floor - 0.5) * math.log(floor / 0.5) + (0.5 - floor) * math.log(0.5 / floor)
    assert psi({"a": 0.5, "c": 0.5}, {"b": 0.5, "c": 0.5}) == pytest.approx(want)
    assert {} == shares({"x": 0.0})
