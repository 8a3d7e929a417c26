"""The third set of causes, each rule at its edges on hand-made data (the rates over many slices
are benchmarks/causes.py's): later_positions_collapse, speculation_switched_off,
draft_mismatch, decay_over_uptime, k0_still_costs."""

from __future__ import annotations

import random
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.causes.drafting import DraftingTally, _alpha_sums, _most_first
from specwatch.analysis.causes.lifetime import (
    DECAY_MAX_BINS,
    DECAY_MIN_REQUESTS,
    Lifetime,
    _halve,
    _Model,
    _Third,
)
from specwatch.analysis.causes.positions import FirstPositions, later_collapse, position_cliff
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.speed.k0_cost import K0Cost
from specwatch.core.records import Latency, RequestRecord, SpecConfig, SpecDecodeBlock
from specwatch.settings import load_settings
from specwatch.upstream.specconfig import spec_config

START = 1.8e9


def ladder(k: int, reached: list[int], accepted: list[int]) -> Counts:
    """A slice's counts of steps drafting `k` where reached[j-1] steps reached position j and
    accepted[j-1] of them accepted it (reached[j] == accepted[j - 1])."""
    drafted, kept = [], []
    for j in range(k + 1):  # steps that accepted exactly j
        ending = (accepted[j - 1] if j else reached[0]) - (accepted[j] if j < k else 0)
        drafted += [k] * ending
        kept += [j] * ending
    counts = Counts(8)
    counts.add_steps(drafted, kept)
    return counts


def test_later_positions_that_each_accept_a_quarter_behind_a_normal_first_are_a_collapse() -> None:
    # vLLM#51009's shape: position 1 at 70%, each later one at 25% given the one before
    found = later_collapse(ladder(4, [1000, 700, 175, 44], [700, 175, 44, 11]))
    assert found is not None
    assert found["first"] == pytest.approx(0.7)
    assert found["later"] == pytest.approx(175 / 700)  # position 3 and 4 reached < 200 times
    assert 2 == found["positions"]


@pytest.mark.parametrize(
    ("reached", "accepted", "named"),
    [
        ([1000, 700], [700, 245], True),  # 0.35: exactly half of 0.7
        ([1000, 700], [700, 252], False),  # 0.36: more than half
        ([1000, 400], [400, 60], True),  # 0.15 against 0.40: 0.25 below, exactly
        ([1000, 400], [400, 64], False),  # 0.16: below half, but only 0.24 below
        ([1000, 700], [700, 0], False),  # nothing at position 2: a position_cliff
        ([1000, 199], [199, 10], False),  # position 2 reached by fewer than 200 steps
        ([199, 150], [150, 10], False),  # position 1 tried by fewer than 200
    ],
)
def test_the_collapse_at_its_edges(reached: list[int], accepted: list[int], named: bool) -> None:
    counts = ladder(2, reached, accepted)
    assert named == (later_collapse(counts) is not None)
    if accepted[-1] == 0:
        assert 2 == position_cliff(counts)


def test_healthy_acceptance_rising_with_depth_is_no_collapse() -> None:
    # spec-decode-advisor's healthy shape: p1 .668 rising to .88
    assert later_collapse(ladder(4, [1000, 668, 501, 416], [668, 501, 416, 366])) is None
    # one later position collapsed and one holding: not every later position
    assert later_collapse(ladder(3, [2000, 1400, 300], [1400, 300, 250])) is None


def config(gate: dict[str, float] | None = None) -> SpecConfig:
    spec = {"method": "eagle3", "model": "d", "num_speculative_tokens": 4, **(gate or {})}
    return spec_config(spec, "1.2.0", "stable", engine="trtllm")


def switched(before: int, drafting: int, run: int, span: float) -> dict[str, object] | None:
    """`before` requests (`drafting` of them drafting, the rest not, spread), then `run`
    requests that drafted nothing over `span` seconds; a window of 300 s."""
    life = Lifetime(300.0)
    for i in range(before):
        drafts = i * drafting // before != (i + 1) * drafting // before
        life.drafting("m", float(i), 40 if drafts else 0, 40)
    start = float(before) + 10.0
    for i in range(run):
        life.drafting("m", start + span * i / max(1, run - 1), 0, 40)
    return life.switched_off("m", config({"acceptance_rate_threshold": 0.3}))


def test_speculation_that_stops_for_good_is_switched_off_with_its_time_and_gate() -> None:
    found = switched(40, 40, 30, 300.0)
    assert found is not None
    assert found["stopped_at"] == 50.0
    assert 30 == found["requests"]
    assert found["drafting_share_before"] == 1.0
    assert "acceptance_rate_threshold=0.3" == found["gate"]


@pytest.mark.parametrize(
    ("before", "drafting", "run", "span", "named"),
    [
        (40, 40, 29, 300.0, False),  # 29 in a row
        (40, 40, 30, 299.0, False),  # over less than a window
        (29, 29, 30, 300.0, False),  # too few before
        (40, 20, 30, 300.0, True),  # half of those before drafted
        (40, 19, 30, 300.0, False),  # fewer than half: not_drafting's, from the start
    ],
)
def test_switched_off_at_its_edges(
    before: int, drafting: int, run: int, span: float, named: bool
) -> None:
    assert named == (switched(before, drafting, run, span) is not None)


def test_a_request_that_drafts_ends_the_run_and_short_ones_tell_nothing() -> None:
    life = Lifetime(300.0)
    for i in range(40):
        life.drafting("m", float(i), 40, 40)
    for i in range(40):
        life.drafting("m", 100.0 + 10 * i, 0, 40)
        life.drafting("m", 100.0 + 10 * i, 0, 15)  # shorter than 16 tokens: not counted
    assert life.switched_off("m", None) is not None
    life.drafting("m", 600.0, 40, 40)
    assert life.switched_off("m", None) is None
    assert config().gate is None
    assert config({"acceptance_length_threshold": 1.5, "acceptance_window": 64}).gate == (
        "acceptance_length_threshold=1.5, acceptance_window=64"
    )


def add_to(
    life: Lifetime, model: str, ts: float, parts: dict[tuple[str, str], tuple[int, int]]
) -> None:
    """One request's counts per slice into `life`, with their sums over the request."""
    accepted = sum(a for a, _ in parts.values())
    life.add(model, ts, parts, accepted, sum(t for _, t in parts.values()))


def mismatch(first: float, later: float, requests: int = 40) -> dict[str, object] | None:
    """Requests of 100 trials: the first 30 accepting `first` of them, the rest `later`."""
    life = Lifetime(300.0)
    for i in range(requests):
        accepted = round(100 * (first if i < 30 else later))
        add_to(life, "m", float(i), {("0-512", "chat"): (accepted, 100)})
    return life.mismatch("m", config())


def test_near_zero_from_the_first_request_is_a_mismatch_named_with_the_config() -> None:
    found = mismatch(0.02, 0.02)
    assert found is not None
    assert found["alpha_first"] == pytest.approx(0.02)
    assert (found["method"], found["draft"], found["vllm_version"]) == ("eagle3", "d", "1.2.0")
    assert found["config"] == config().id
    assert 4 == found["num_speculative_tokens"]
    assert mismatch(0.05, 0.05) is not None  # at the bar
    assert mismatch(0.06, 0.02) is None  # the first requests accepted
    assert mismatch(0.02, 0.5) is None  # it accepts now: since the start above the bar
    assert mismatch(0.02, 0.02, requests=29) is None  # fewer than 30 requests


def decayed(shares: list[float], factors: list[float]) -> dict[str, Any] | None:
    """Two slices (alpha 0.8 and 0.3) over 18 bins of 10 s (a window of 60 s), 20 requests of
    40 trials a bin: `shares[b]` of them in the first slice, acceptance times `factors[b]`."""
    life = Lifetime(60.0)
    rng = random.Random(5)
    for b in range(18):
        for i in range(20):
            first = i < shares[b] * 20
            alpha = (0.8 if first else 0.3) * factors[b]
            accepted = sum(rng.random() < alpha for _ in range(40))
            key = ("0-512", "code") if first else ("0-512", "chat")
            add_to(life, "m", 10.0 * b + i * 0.4, {key: (accepted, 40)})
    return life.decay("m")


def test_acceptance_sliding_down_over_the_pods_life_is_a_decay() -> None:
    found = decayed([0.5] * 18, [1.0 - 0.04 * b for b in range(18)])
    assert found is not None
    assert found["ratio"] <= 0.7
    assert found["z"] >= 4
    assert found["uptime_seconds"] == 180.0


def test_a_traffic_mix_moving_to_a_harder_slice_is_no_decay() -> None:
    # the raw alpha-hat falls from 0.72 to 0.38, each slice holds its own
    shares = [0.85 - 0.04 * b for b in range(18)]
    assert decayed(shares, [1.0] * 18) is None


def test_a_blip_in_the_middle_or_a_small_slide_is_no_decay() -> None:
    blip = [1.0] * 6 + [0.2] * 6 + [0.6] * 6  # the last third at 0.6 of the first
    assert decayed([0.5] * 18, blip) is None  # the middle third below the last
    assert decayed([0.5] * 18, [1.0] * 6 + [0.8] * 6 + [0.6] * 6) is not None
    assert decayed([0.5] * 18, [1.0 - 0.015 * b for b in range(18)]) is None  # ratio ~0.78
    life = Lifetime(60.0)  # eleven bins: too short a life
    for b in range(11):
        add_to(life, "m", 10.0 * b, {("0-512", "chat"): (40 - 3 * b, 40)})
    assert life.decay("m") is None


def test_the_bins_merge_past_their_cap_and_keep_their_sums() -> None:
    life = Lifetime(60.0)
    for b in range(200):  # 2,000 s of 10-s bins: 96 at most, merged to 20-s bins
        add_to(life, "m", 10.0 * b, {("0-512", "chat"): (20, 40)})
    flat = life.decay("m")
    assert flat is None
    sliding = Lifetime(60.0)
    for b in range(200):
        for i in range(5):
            add_to(sliding, "m", 10.0 * b + i, {("0-512", "chat"): (max(1, 30 - b // 8), 40)})
    found = sliding.decay("m")
    assert found is not None
    assert found["uptime_seconds"] == pytest.approx(2000.0, abs=40.0)


def test_bins_merged_keep_both_halves() -> None:
    """Over the first 960 s (96 bins of 10 s) even bins accept 0.8 and odd ones 0.2, after it
    0.5: all alike once a pair is merged, no decay; a merge that kept one half of each pair
    would see 0.8 fall to 0.5."""
    life = Lifetime(60.0)
    rng = random.Random(7)
    for t in range(0, 2000, 2):
        alpha = 0.5 if t >= 960 else (0.8 if t // 10 % 2 == 0 else 0.2)
        accepted = sum(rng.random() < alpha for _ in range(40))
        add_to(life, "m", float(t), {("0-512", "chat"): (accepted, 40)})
    assert life.decay("m") is None


def k0_requests(
    cost: K0Cost,
    c: float,
    paid: float,
    n: int = 300,
    *,
    zero_every: int = 2,
    noise: float = 0.1,
) -> None:
    """Requests at one load: K 2..4, one in `zero_every` with 40% of their steps at K = 0; a
    plain step of 20 ms, drafting a token costs `c` of it; a K = 0 step pays `paid` of what
    drafting K costs; each request's steps x a log-normal factor of sd `noise`."""
    rng = random.Random(3)
    for i in range(n):
        k = rng.choice((2, 3, 4))
        steps = 40
        zeros = 16 if i % zero_every == 0 else 0
        drafted = (k,) * (steps - zeros) + (0,) * zeros
        tokens = sum(drafted) + paid * k * zeros
        seconds = 0.02 * (steps + c * tokens) * rng.lognormvariate(0.0, noise)
        cost.add("m", 1, seconds, steps, drafted)


def test_k0_steps_that_cost_as_much_as_drafting_are_named() -> None:
    cost = K0Cost()
    k0_requests(cost, 0.1, paid=1.0)
    found = cost.still_costs("m")
    assert found is not None
    assert found["paid"] == pytest.approx(1.0, abs=0.35)
    assert found["step_k0"] > found["step_plain"]
    assert found["step_k0"] == pytest.approx(found["step_k"], rel=0.05)
    assert 300 == found["requests"]


def test_free_k0_steps_or_a_cheap_drafter_are_not_named() -> None:
    healthy = K0Cost()
    k0_requests(healthy, 0.1, paid=0.0)
    assert healthy.still_costs("m") is None
    # K = 0 steps paying a fifth of drafting K, measured tightly: surely more than nothing,
    # surely less than half
    part = K0Cost()
    k0_requests(part, 0.1, paid=0.2, noise=0.01)
    assert part.still_costs("m") is None
    # K = 0 pays in full, measured tightly, but drafting costs 1% a token: 3% a step
    cheap = K0Cost()
    k0_requests(cheap, 0.01, paid=1.0, noise=0.001)
    assert cheap.still_costs("m") is None
    material = K0Cost()  # the same at 4% a token: 12% a step
    k0_requests(material, 0.04, paid=1.0, noise=0.001)
    assert material.still_costs("m") is not None
    few = K0Cost()  # 29 requests with K = 0 steps beside 261 without
    k0_requests(few, 0.1, paid=1.0, n=290, zero_every=10, noise=0.02)
    assert few.still_costs("m") is None
    enough = K0Cost()  # 30 beside 270
    k0_requests(enough, 0.1, paid=1.0, n=300, zero_every=10, noise=0.02)
    assert enough.still_costs("m") is not None


def test_one_k_for_every_request_leaves_the_plane_unidentified() -> None:
    cost = K0Cost()
    rng = random.Random(1)
    for i in range(300):
        zeros = 8 if i % 3 == 0 else 0
        drafted = (4,) * (40 - zeros) + (0,) * zeros
        cost.add("m", 1, 0.02 * (40 + 0.1 * 160) * rng.lognormvariate(0.0, 0.1), 40, drafted)
    assert cost.still_costs("m") is None


def test_switched_off_for_most_of_the_life_is_named_as_that_not_as_not_drafting() -> None:
    """40 requests draft, then 200 over 1,000 s draft nothing: most requests drafted nothing
    (not_drafting's share), but the run says the engine stopped: one cause, the specific one."""
    analyzer = Analyzer(load_settings(), started=START)
    for i in range(240):
        drafted = i < 40
        steps = tuple(j % 4 for j in range(20))  # 0..3 accepted, every position reached
        spec = SpecDecodeBlock(3, (3,) * 20, steps) if drafted else SpecDecodeBlock(3, (), ())
        analyzer.ingest(
            RequestRecord(
                ts=START + 5 * i,
                request_id=f"r{i}",
                model="m",
                task="chat",
                outcome=C.Outcome.OBSERVED,
                prompt_tokens=100,
                completion_tokens=60,
                spec=spec,
                latency=Latency(tpot=0.02),
            )
        )
    (rollup,) = analyzer.snapshot(START + 1200).rollups
    assert [C.CauseKind.SPECULATION_SWITCHED_OFF] == [c.kind for c in rollup.causes]


def test_steps_that_drafted_less_and_accepted_it_all_do_not_fake_a_collapse() -> None:
    """1,000 steps draft 1 and accept it; 300 draft 2, 200 of them accept the first and 100
    of those the second. Position 2 is tried by 200 steps and accepts half of them: no
    collapse. Taken as the steps that accepted position 1 (1,200, capped at the 300 that
    drafted 2), it would accept a third, below half of position 1's 0.92."""
    counts = Counts(8)
    counts.add_steps([1] * 1000 + [2] * 300, [1] * 1000 + [2] * 100 + [1] * 100 + [0] * 100)
    assert later_collapse(counts) is None


def test_a_first_position_below_half_but_close_in_absolute_terms_is_no_deficit() -> None:
    """Position 1 at 0.20 against 0.44 after it: below half, but 0.24 apart (the bar is 0.25,
    #63: the absolute bar dropped named small differences); at 0.15 against 0.50 it is one."""
    near, far = FirstPositions(), FirstPositions()
    for _ in range(10):
        near.add("m", ladder(4, [100, 20, 8, 4], [20, 8, 4, 2]))
        far.add("m", ladder(4, [100, 15, 7, 4], [15, 7, 4, 2]))
    assert near.deficit("m") is None
    assert far.deficit("m") is not None


def test_a_pause_that_halves_a_low_acceptance_by_little_is_no_collapse() -> None:
    """0.31 before the pause, 0.13 after: below half, but 0.18 lower (the bar is 0.2, #63)."""
    tally = DraftingTally()
    pause = (0,) * 8
    for _ in range(10):
        drafted = (4,) * 20 + pause + (4,) * 20
        before = (1,) * 9 + (0,) * 11
        after = (1,) * 3 + (0,) * 17
        tally.steps("m", drafted, before + pause + after)
    assert tally.collapse_after_pause("m") is None


def test_a_third_sums_its_slices_and_its_log_variance_is_the_per_request_one() -> None:
    """Per slice side: requests, accepted, trials, sum a^2, sum a t, sum t^2; at each slice's
    own alpha-hat p. Three requests in two slices: R = accepted / E, and the variance of ln R
    is n / (n - 1) x sum (a_i - R p t_i)^2 / E^2 / R^2, computed here request by request."""
    requests = [((3.0, 10.0), 0.5), ((6.0, 10.0), 0.5), ((2.0, 8.0), 0.25)]  # ((a, t), p)
    third = _Third()
    for (a, t), p in requests:
        third.add([1.0, a, t, a * a, a * t, t * t], p)
    expected = sum(p * t for (_, t), p in requests)
    assert (third.requests, third.accepted, third.trials) == (3, 11, 28)
    assert third.expected == pytest.approx(expected)
    assert third.ratio() is None  # 3 requests: below the minimum
    r = 11 / expected
    by_hand = sum((a - r * p * t) ** 2 for (a, t), p in requests) / expected**2 * 3 / 2 / r**2
    assert third.log_variance(r) == pytest.approx(by_hand, rel=1e-12)
    for _ in range(DECAY_MIN_REQUESTS - 3):
        third.add([1.0, 1.0, 4.0, 1.0, 4.0, 16.0], 0.25)
    assert third.ratio() == pytest.approx(third.accepted / third.expected)


def test_merged_bins_keep_every_sum_and_halve_the_count() -> None:
    """Past 96 bins two neighbours merge: bin b holds 2b and 2b + 1, nothing is lost, the
    upper half is empty again, the width doubles; an odd count rounds up."""
    model = _Model(width=10.0, bins=DECAY_MAX_BINS - 1)
    moments = [float(i) for i in range(DECAY_MAX_BINS * 6)]
    model.slices["0-512", "chat"] = list(moments)
    _halve(model)
    merged = model.slices["0-512", "chat"]
    assert (20.0, DECAY_MAX_BINS // 2) == (model.width, model.bins)
    for b in range(DECAY_MAX_BINS // 2):
        for i in range(6):
            assert merged[b * 6 + i] == moments[2 * b * 6 + i] + moments[(2 * b + 1) * 6 + i]
    assert not any(merged[DECAY_MAX_BINS // 2 * 6 :])
    assert sum(merged) == sum(moments)
    even = _Model(width=10.0, bins=DECAY_MAX_BINS)
    _halve(even)
    assert DECAY_MAX_BINS // 2 == even.bins


def test_steps_around_a_pause_count_trials_as_alpha_hat_does() -> None:
    """A step that drafted d and accepted a tried a + 1 tokens, or d where it accepted all;
    a step that drafted nothing tried none."""
    assert (5, 7) == _alpha_sums((3, 3, 0, 2), (3, 1, 0, 1))
    assert (0, 0) == _alpha_sums((0, 0), (0, 0))
    assert (4, 4) == _alpha_sums((4,), (4,))


def test_idle_requests_are_named_by_task_and_mode_the_commonest_first_ties_by_name() -> None:
    assert ["code", "chat", "a", "b"] == list(_most_first({"a": 1, "chat": 2, "b": 1, "code": 5}))


def test_a_mismatch_without_a_known_config_says_so() -> None:
    life = Lifetime(300.0)
    for i in range(40):
        add_to(life, "m", float(i), {("0-512", "chat"): (2, 100)})
    found = life.mismatch("m", None)
    assert found is not None
    assert found["config"] is None
    assert "method" not in found
