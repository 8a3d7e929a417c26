"""The causes' rules on hand-made requests, where a statistical run could not say which line
decided: the repetition cause needs a lift that changes the verdict."""

from __future__ import annotations

import random

import msgspec
import pytest
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.causes.drafting import DraftingTally
from specwatch.analysis.causes.positions import (
    POSITION_BIN,
    POSITION_BINS,
    CliffContexts,
    ContextPositions,
    FirstPositions,
    _tried_and_accepted,
    position_cliff,
)
from specwatch.analysis.causes.rules import MAX_EXTREMES_KEPT, CauseTracker, _Extremes
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.analysis.speed.k0_cost import K0Cost
from specwatch.core.records import RequestRecord, SliceKey, SpecConfig, SpecDecodeBlock
from specwatch.settings import load_settings

from tests.support.analysis import analyzer, cliff_steps, k4_record
from tests.support.analysis import record as plain_record


def request(i: int, accepted_per_step: int) -> RequestRecord:
    """40 steps drafting 4, each accepting `accepted_per_step` (4: a loop)."""
    return k4_record(i, (4,) * 40, (accepted_per_step,) * 40)


def causes_of(normal: int) -> list[str]:
    """30 requests accepting `normal` of 4 a step, and 10 loops accepting all."""
    analyzer = Analyzer(load_settings(), started=1.8e9)
    for i in range(40):
        analyzer.ingest(request(i, 4 if i % 4 == 0 else normal))
    analyzer.evaluate(1.8e9 + 41)
    snapshot = analyzer.snapshot(1.8e9 + 41)
    (view,) = [v for v in snapshot.slices if v.key.task == "chat"]
    return [cause.kind for cause in view.causes]


def test_loops_that_lift_a_slice_over_a_threshold_are_named() -> None:
    # alpha-hat 0.667 without the loops, 0.75 with them: over green (0.7)
    assert [C.CauseKind.REPETITION_SUSPECTED] == causes_of(2)


def test_loops_that_lift_a_slice_without_changing_its_verdict_are_not() -> None:
    # 0.75 without, 0.8125 with: a lift of 0.06, both green
    assert [] == causes_of(3)


def test_the_position_profile_puts_each_step_in_the_bin_of_its_own_position() -> None:
    """Against the plain rule, step by step: position = prompt + 1 + what came before."""
    rng = random.Random(1)
    profile = ContextPositions()
    drafted, accepted = [0] * POSITION_BINS, [0] * POSITION_BINS
    for _ in range(2000):
        k = rng.choice([1, 3, 4, 7])
        d = tuple(rng.choice([0, k, k, k]) for _ in range(rng.randint(1, 300)))
        a = tuple(rng.randint(0, x) for x in d)
        prompt = rng.choice([0, 5, 63, 64, 1000, 65535, 70000, 200000])
        profile.add(prompt, SpecDecodeBlock(k, d, a))
        position = prompt + 1
        for dj, aj in zip(d, a, strict=True):
            drafted[min(position // POSITION_BIN, POSITION_BINS - 1)] += dj
            accepted[min(position // POSITION_BIN, POSITION_BINS - 1)] += aj
            position += aj + 1
    assert drafted == profile.drafted
    assert accepted == profile.accepted


def steps_counts(steps: list[tuple[int, int]], max_position: int = 8) -> Counts:
    """One slice's counts of (drafted, accepted) steps."""
    counts = Counts(max_position)
    counts.add_steps([d for d, _ in steps], [a for _, a in steps])
    return counts


def ladder(k: int, reached: list[int], accepted: list[int]) -> list[tuple[int, int]]:
    """Steps drafting `k` where, per position j (1-based), reached[j-1] steps reached it and
    accepted[j-1] of them accepted it (each position reached by those that accepted the one
    before: reached[j] == accepted[j - 1])."""
    steps = []
    for j in range(k + 1):  # steps that accepted exactly j
        ending = (accepted[j - 1] if j else reached[0]) - (accepted[j] if j < k else 0)
        steps += [(k, j)] * ending
    return steps


def test_a_position_cliff_is_where_acceptance_falls_to_nothing_after_a_position_that_holds() -> (
    None
):
    # positions 1 and 2 accept 80% and 50%, position 3 accepts 2 of the 200 that reach it
    steps = ladder(4, [500, 400, 200, 2], [400, 200, 2, 1])
    assert 3 == position_cliff(steps_counts(steps))
    # 3 of 200 (1.5%) is not nothing
    assert position_cliff(steps_counts(ladder(4, [500, 400, 200, 3], [400, 200, 3, 1]))) is None
    # the position before must hold: 10% of those that reach it
    holding = ladder(4, [4000, 2000, 200, 1], [2000, 200, 1, 0])  # position 2 holds 10%
    assert 3 == position_cliff(steps_counts(holding))
    failing = ladder(4, [4000, 2100, 200, 1], [2100, 200, 1, 0])  # 9.5%
    assert position_cliff(steps_counts(failing)) is None
    # and 200 steps must reach the cliff position
    assert position_cliff(steps_counts(ladder(4, [500, 400, 199, 1], [400, 199, 1, 0]))) is None


def test_a_first_position_far_below_the_later_ones_in_each_request_is_a_deficit() -> None:
    firsts = FirstPositions()
    # position 1 accepts 30%, positions 2..4 80% of the steps that reach them, in every request
    for _ in range(10):
        firsts.add("m", steps_counts(ladder(4, [100, 30, 24, 19], [30, 24, 19, 15])))
    deficit = firsts.deficit("m")
    assert deficit is not None
    assert abs(deficit["first"] - 0.3) < 1e-9
    assert 10 == deficit["requests"]
    # 60% of the later ones' (0.48 against 0.8) is within what steps that differ give
    near = FirstPositions()
    for _ in range(10):
        near.add("m", steps_counts(ladder(4, [100, 48, 38, 30], [48, 38, 30, 24])))
    assert near.deficit("m") is None


def test_requests_that_differ_are_no_deficit_though_pooled_they_look_like_one() -> None:
    """A quarter of the requests accept 95% at every position, the rest 5% at the first and
    nothing after: pooled over the requests, position 1 accepts 0.27 and the later positions
    0.86 (the good requests reach them), a deficit by a pooled rule; each request compared
    with itself has none."""
    firsts = FirstPositions()
    pooled = Counts(8)
    for i in range(40):
        good = i % 4 == 0
        steps = ladder(4, [200, 190, 180, 171], [190, 180, 171, 162]) if good else [(4, 0)] * 190
        steps += [] if good else [(4, 1)] * 10
        request = steps_counts(steps)
        firsts.add("m", request)
        pooled.merge(request)
    positions = _tried_and_accepted(pooled)
    first = positions[0][1] / positions[0][0]
    later = sum(a for _, a in positions[1:]) / sum(t for t, _ in positions[1:])
    assert first < 0.5 * later  # the pooled rule would name it
    assert firsts.deficit("m") is None


def test_a_drafter_that_proposes_almost_nothing_for_long_prompts_is_not_drafting() -> None:
    tally = DraftingTally()
    for _ in range(30):
        tally.drafting("m", "32k+", "chat", 0, 40)  # 1,200 output tokens, nothing drafted
        tally.drafting("m", "0-512", "chat", 30, 40)
    idle = tally.not_drafting("m")
    assert idle is not None
    assert ["32k+"] == idle["ctx_buckets"]
    assert idle["share"] == 1.0
    for _ in range(31):  # as many again that draft a little: 620 of 2,440 tokens, 30 of 61
        tally.drafting("m", "32k+", "chat", 20, 40)  # (30 of 61 not drafting: not surely most)
    assert tally.not_drafting("m") is None


def test_speculation_off_for_most_requests_is_not_drafting_though_the_rest_draft() -> None:
    # 95% of requests draft nothing (a gate on sampling parameters), 5% draft normally: the
    # pooled share is 20% (the drafting few lift it past 1%), the share of requests 95%
    tally = DraftingTally()
    for i in range(60):
        if i % 20 == 0:
            tally.drafting("m", "0-512", "code", 160, 40)
        else:
            tally.drafting("m", "0-512", "chat" if i % 3 else "code", 0, 40)
    idle = tally.not_drafting("m")
    assert idle is not None
    assert ["0-512"] == idle["ctx_buckets"]
    assert idle["share"] == 57 / 60
    assert {"chat": 38, "code": 19} == idle["tasks"]  # what the idle requests were, by task


# most, surely: the lower 98% Wilson bound of the share at 0.5 or more (22 of 30, 40 of 60)
@pytest.mark.parametrize(
    ("idle", "drafting", "found"), [(21, 9, False), (22, 8, True), (39, 21, False), (40, 20, True)]
)
def test_the_share_of_requests_at_its_edge(idle: int, drafting: int, found: bool) -> None:
    tally = DraftingTally()
    for _ in range(idle):
        tally.drafting("m", "0-512", "chat", 0, 40)
    for _ in range(drafting):
        tally.drafting("m", "0-512", "chat", 100, 40)
    for _ in range(50):  # too short to have drafted: in neither share
        tally.drafting("m", "0-512", "chat", 0, 8)
    assert found == (tally.not_drafting("m") is not None)


def test_acceptance_that_collapses_after_a_pause_is_named() -> None:
    tally = DraftingTally()
    pause = (0,) * 8
    for _ in range(10):
        # before: 20 steps accepting 3 of 4 (alpha 0.75); after: 1 of 4 (alpha 0.5)
        drafted = (4,) * 20 + pause + (4,) * 20
        tally.steps("m", drafted, (3,) * 20 + pause + (1,) * 20)
    assert tally.collapse_after_pause("m") is None  # 0.5 is not half of 0.75
    for _ in range(30):
        drafted = (4,) * 20 + pause + (4,) * 20
        tally.steps("m", drafted, (3,) * 20 + pause + (0,) * 20)
    found = tally.collapse_after_pause("m")
    assert found is not None
    assert 40 == found["requests"]
    assert found["alpha_after"] <= 0.5 * found["alpha_before"]


def kinds_by_slice(records: list[RequestRecord]) -> dict[str, set[str]]:
    analyzer = Analyzer(load_settings(), started=1.8e9)
    for r in records:
        analyzer.ingest(r)
    now = max(r.ts for r in records) + 1
    analyzer.evaluate(now)
    snapshot = analyzer.snapshot(now)
    return {
        f"{v.key.ctx_bucket}/{v.key.task}": {c.kind for c in v.causes}
        for v in (*snapshot.slices, *snapshot.rollups)
    }


def test_a_context_limit_on_a_bucket_bound_tags_only_the_buckets_past_it() -> None:
    """Nothing accepted from position 2,048 on, the upper bound of `512-2k` (whose positions
    end at 2,047): that bucket does not reach the limit, `2k-4k` does."""
    records = []
    for i in range(60):
        prompt = 1200 + (i % 6) * 200  # steps from 1,200 to ~2,600
        position, accepted = prompt + 1, []
        for _ in range(60):
            a = 0 if position >= 2048 else 2
            accepted.append(a)
            position += a + 1
        records.append(k4_record(i, (4,) * 60, tuple(accepted), prompt=prompt))
    found = kinds_by_slice(records)
    assert C.CauseKind.DRAFT_CONTEXT_LIMIT in found["2k-4k/chat"]
    assert C.CauseKind.DRAFT_CONTEXT_LIMIT not in found["512-2k/chat"]


def test_exactly_three_loops_that_lift_a_slice_over_green_are_named() -> None:
    """27 requests at 0.67 and 3 loops (80 steps accepting all): 0.74 with them."""
    records = [k4_record(i, (4,) * 40, (2,) * 40) for i in range(27)]
    records += [k4_record(27 + i, (4,) * 80, (4,) * 80) for i in range(3)]
    assert C.CauseKind.REPETITION_SUSPECTED in kinds_by_slice(records)["0-512/chat"]


def test_a_schedule_ignored_at_the_upper_bound_of_its_row_is_not_applied() -> None:
    """Schedule K 4 up to 4 in flight, 2 from 5 to 16: ten requests at 16 in flight (the
    row's inclusive end) drafting 4 are the schedule not applied."""
    from specwatch.upstream.specconfig import spec_config

    schedule = [[1, 4, 4], [5, 16, 2]]
    config = {"method": "ngram", "num_speculative_tokens": 4}
    config["num_speculative_tokens_per_batch_size"] = schedule
    analyzer = Analyzer(load_settings(), started=1.8e9)
    analyzer.set_config(spec_config(config, "0.32.0", "stable"))
    for i in range(10):
        analyzer.ingest(k4_record(i, (4,) * 25, (1,) * 25, in_flight=16))
    analyzer.evaluate(1.8e9 + 11)
    snapshot = analyzer.snapshot(1.8e9 + 11)
    (rollup,) = snapshot.rollups
    assert C.CauseKind.SCHEDULE_NOT_APPLIED in {c.kind for c in rollup.causes}


def test_a_model_that_drafts_nothing_at_all_keeps_its_rollup_and_carries_the_cause() -> None:
    # every request of model `idle` comes back with the speculative block and no step (a
    # checkpoint without draft tensors): it has no slice, but its rollup stands, not drafting
    a = analyzer()
    nothing = SpecDecodeBlock(3, (), ())
    for i in range(40):
        idle = plain_record(float(i), (), model="idle")
        a.ingest(msgspec.structs.replace(idle, spec=nothing, completion_tokens=40))
        a.ingest(plain_record(float(i), (2, 1, 3, 0) * 5, model="busy"))
    snapshot = a.snapshot(41.0)
    rollups = {view.key.model: view for view in snapshot.rollups}
    assert {"idle", "busy"} == set(rollups)
    assert not [view for view in snapshot.slices if view.key.model == "idle"]
    view = rollups["idle"]
    assert view.window.trials == 0
    assert view.zone == C.Zone.INSUFFICIENT
    (cause,) = [c for c in view.causes if c.kind == C.CauseKind.NOT_DRAFTING]
    assert cause.detail["share"] == 1.0
    assert [] == [c for c in rollups["busy"].causes if c.kind == C.CauseKind.NOT_DRAFTING]


def test_a_cliff_inside_a_bucket_is_named_with_the_context_where_it_starts() -> None:
    rng = random.Random(3)
    depths, healthy = CliffContexts(), CliffContexts()
    for _ in range(400):
        prompt = rng.randint(3000, 6000)
        depths.add(prompt, cliff_steps(rng, prompt, 4500))
        healthy.add(prompt, cliff_steps(rng, prompt, None))
    found = depths.cliff()
    assert found is not None
    position, context = found
    assert position == 3
    assert 4500 <= context <= 4500 + 2 * 256  # the first bin wholly past it
    assert healthy.cliff() is None


def test_a_cliff_at_every_context_is_not_one_from_a_context_on() -> None:
    rng = random.Random(4)
    depths = CliffContexts()
    for _ in range(400):
        prompt = rng.randint(100, 6000)
        depths.add(prompt, cliff_steps(rng, prompt, 0))  # dead from the start: no context
    assert depths.cliff() is None


def test_not_drafting_is_named_on_the_slices_that_do_not_draft_and_the_rollup_only() -> None:
    """Long prompts draft almost nothing (one token in 200), short ones draft 4 a step: the
    long prompts' slice and the model's rollup name not_drafting, the short ones' slice not."""
    analyzer = Analyzer(load_settings(), started=1.8e9)
    for i in range(40):
        analyzer.ingest(request(i, 2))
        idle = msgspec.structs.replace(
            request(i, 2),
            request_id=f"l{i}",
            prompt_tokens=40_000,
            completion_tokens=200,
            spec=SpecDecodeBlock(1, (1,), (0,)),
        )
        analyzer.ingest(idle)
    analyzer.evaluate(1.8e9 + 41)
    snapshot = analyzer.snapshot(1.8e9 + 41)
    named = {
        view.key.ctx_bucket: C.CauseKind.NOT_DRAFTING in [cause.kind for cause in view.causes]
        for view in (*snapshot.slices, *snapshot.rollups)
    }
    assert {"0-512": False, "32k+": True, C.ALL: True} == named


def _tracker() -> CauseTracker:
    settings = load_settings()
    window: SlidingWindow[SliceKey] = SlidingWindow(
        settings.window.length_seconds, settings.window.bucket_seconds, 4
    )
    return CauseTracker(CtxBuckets(settings.ctx_buckets), settings, window, K0Cost())


def test_no_per_request_data_from_three_requests_without_it_while_none_came_with_it() -> None:
    """Named from the third request served without the per-request block, counted; one
    request that came with it means the flags are on (another reason for a gap): not named."""
    tally = DraftingTally()
    for _ in range(2):
        tally.served("m", with_data=False)
    assert 0 == tally.without_data("m")
    tally.served("m", with_data=False)
    assert 3 == tally.without_data("m")
    assert 0 == tally.without_data("other")
    tally.served("m", with_data=True)
    assert 0 == tally.without_data("m")


def test_no_per_request_data_names_the_flags_the_running_vllm_needs() -> None:
    tracker = _tracker()
    assert tracker.no_data("m") is None
    for _ in range(4):
        tracker.served("m", with_data=False)
    found = tracker.no_data("m")
    assert found is not None
    assert C.CauseKind.NO_PER_REQUEST_DATA == found.kind
    assert {"requests": 4, "vllm_version": None, "flags": list(C.per_request_flags(None))} == (
        found.detail
    )
    config = SpecConfig("c", "ngram", None, 3, (), None, "0.31.2", "stable")
    tracker.set_config(config)
    found = tracker.no_data("m")
    assert found is not None
    assert "0.31.2" == found.detail["vllm_version"]
    assert found.detail["flags"][0].startswith("an upgrade to vLLM 0.32 or later")


def test_a_slices_extremes_are_those_of_its_kind_at_or_after_the_window_start() -> None:
    """The window starts at `since`, inclusive; older entries are let go; each kind apart."""
    extremes = _Extremes()
    for ts, kind, a, t in ((1.0, "loop", 4, 4), (2.0, "loop", 8, 8), (2.0, "zero", 0, 3)):
        extremes.entries.append((ts, kind, a, t))
    extremes.entries.append((3.0, "loop", 2, 2))
    assert (3, 14, 14) == extremes.recent(1.0, "loop")
    assert (2, 10, 10) == extremes.recent(2.0, "loop")  # at the start: in
    assert (1, 0, 3) == extremes.recent(2.0, "zero")
    assert 3 == len(extremes.entries)  # the one before the window let go
    assert MAX_EXTREMES_KEPT == extremes.entries.maxlen
