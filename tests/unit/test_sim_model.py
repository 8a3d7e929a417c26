from __future__ import annotations

import random

from specwatch.sim.acceptance import AcceptanceModel, Drop, plan_steps


def accepted_share(model: AcceptanceModel, task: str, ctx: int, elapsed: float = 0.0) -> float:
    rng = random.Random(0)
    steps = [
        s
        for _ in range(200)
        for s in plan_steps(rng, model, 4, task, ctx, 64, elapsed)
        if s.drafted
    ]
    return sum(s.accepted for s in steps) / sum(s.drafted for s in steps)


def test_every_request_emits_exactly_max_tokens() -> None:
    steps = plan_steps(random.Random(1), AcceptanceModel(no_draft_prob=0.2), 4, "code", 10, 50, 0)
    assert 49 == sum(step.emitted for step in steps)  # + 1 from prefill
    assert any(step.drafted == 0 for step in steps)


def test_acceptance_depends_on_task_context_and_time() -> None:
    model = AcceptanceModel(drops=(Drop(after=60.0, factor=0.5, task="code"),))
    assert accepted_share(model, "code", 100) > accepted_share(model, "translation", 100)
    assert accepted_share(model, "code", 100) > accepted_share(model, "code", 16000)
    assert accepted_share(model, "code", 100) > accepted_share(model, "code", 100, elapsed=61.0)
    assert accepted_share(model, "chat", 100) == accepted_share(model, "chat", 100, elapsed=61.0)


def test_the_same_seed_gives_the_same_steps() -> None:
    model = AcceptanceModel()
    first = plan_steps(random.Random(5), model, 4, "chat", 300, 80, 0)
    assert first == plan_steps(random.Random(5), model, 4, "chat", 300, 80, 0)
