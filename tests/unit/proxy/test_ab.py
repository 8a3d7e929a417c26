"""The A/B router: the hash split, the rollback sources, auto-rollback, the admin token."""

from __future__ import annotations

import hashlib
from typing import Any

from specwatch import conventions as C
from specwatch.proxy.ab import ABRouter, point
from specwatch.proxy.budget import ByteBudget
from specwatch.settings import ABSettings
from specwatch.sidecar.admin import authorized


def router(**cfg: Any) -> ABRouter:
    settings = ABSettings(baseline_upstream="http://base", **cfg)
    return ABRouter(settings, "http://spec", clock=lambda: 0.0)


def test_points_are_uniform_and_stable() -> None:
    points = [point(f"user-{i}") for i in range(20_000)]
    assert all(0.0 <= p < 100.0 for p in points)
    deciles = [sum(10 * d <= p < 10 * (d + 1) for p in points) for d in range(10)]
    assert all(1_850 < n < 2_150 for n in deciles), deciles  # 2,000 +- 3.4 sd
    assert point("user-1") == point("user-1")
    # The documented mapping (the first 8 bytes of SHA-256 as a fraction of 2^64): changing it
    # would move every user to another side.
    digest = hashlib.sha256(b"stable-across-versions").hexdigest()
    assert int(digest[:16], 16) / 2**64 * 100 == point("stable-across-versions")


def test_variant_follows_the_percentage_and_rollback() -> None:
    ab = router(baseline_percent=25)
    keys = [f"k{i}" for i in range(4000)]
    share = sum(ab.variant(k) == C.VARIANT_BASELINE for k in keys) / len(keys)
    assert 0.22 < share < 0.28
    assert "http://base" == ab.upstream(C.VARIANT_BASELINE)
    ab.hold("admin", True, "test")
    assert {C.VARIANT_BASELINE} == {ab.variant(k) for k in keys}
    assert ab.hold("file", True, "flag") is True
    assert ab.hold("file", True, "flag") is False  # no change, no second count
    ab.hold("admin", False, "test")
    assert ab.rolled_back  # the file still holds it
    ab.hold("file", False, "flag")
    assert not ab.rolled_back
    expected = {(to, source): 1 for to in ("rolled_back", "rolled_forward")
                for source in ("admin", "file")}  # fmt: skip
    assert expected == dict(ab.switches)
    assert C.VARIANT_SPEC == ABRouter(ABSettings(), "http://spec").variant("anything")


def test_auto_rollback_after_the_configured_red_time_only() -> None:
    ab = router(baseline_percent=5, auto_rollback_seconds=60)
    ab.check_zones({"m"}, now=100.0)
    ab.check_zones({"m"}, now=159.0)
    assert not ab.rolled_back
    ab.check_zones(set(), now=160.0)  # recovered: the clock restarts
    ab.check_zones({"m"}, now=161.0)
    ab.check_zones({"m"}, now=220.0)
    assert not ab.rolled_back
    ab.check_zones({"m"}, now=221.0)
    assert {"auto"} == set(ab.held_by)
    ab.check_zones(set(), now=300.0)  # never undoes itself
    assert ab.rolled_back
    off = router(baseline_percent=5)  # default: off
    off.check_zones({"m"}, now=0.0)
    off.check_zones({"m"}, now=1e9)
    assert not off.rolled_back


def test_token_rules() -> None:
    assert authorized(None, None, loopback=True)
    assert not authorized(None, None, loopback=False)
    assert not authorized(None, "t", loopback=True)  # a configured token is always required
    assert not authorized("Bearer x", "t", loopback=False)
    assert not authorized("t", "t", loopback=False)
    assert authorized("Bearer t", "t", loopback=False)


def test_the_shadow_check_compares_only_greedy_single_choice_spec_requests() -> None:
    from specwatch.core.health import Health
    from specwatch.proxy.shadow import Shadow
    from specwatch.settings import load_settings

    settings = load_settings(
        ab={"baseline_upstream": "http://base", "baseline_percent": 10}, shadow={"fraction": 1.0}
    )
    shadow = Shadow(settings, Health(), lambda: None, ByteBudget(1 << 20))  # type: ignore[arg-type,return-value]
    greedy = {"prompt": "p", "temperature": 0}
    assert shadow.wanted(greedy, "spec")
    assert not shadow.wanted({**greedy, "temperature": 0.7}, "spec")  # sampling differs anyway
    assert not shadow.wanted({"prompt": "p"}, "spec")  # vLLM's default temperature is 1
    assert not shadow.wanted({**greedy, "n": 2}, "spec")
    assert not shadow.wanted(greedy, "baseline")  # the baseline itself: nothing to compare
