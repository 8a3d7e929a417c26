from __future__ import annotations

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
