"""The causes' rules on hand-made requests, where a statistical run could not say which line
decided: the repetition cause needs a lift that changes the verdict."""

from __future__ import annotations

import random

from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.causes import POSITION_BIN, POSITION_BINS, _Positions
from specwatch.model import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings


def request(i: int, accepted_per_step: int) -> RequestRecord:
    """40 steps drafting 4, each accepting `accepted_per_step` (4: a loop)."""
    return RequestRecord(
        ts=1.8e9 + i,
        request_id=f"r{i}",
        model="m",
        task="chat",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=100,
        completion_tokens=40 * (accepted_per_step + 1),
        spec=SpecDecodeBlock(4, (4,) * 40, (accepted_per_step,) * 40),
        latency=Latency(tpot=0.02),
    )


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
    profile = _Positions()
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
