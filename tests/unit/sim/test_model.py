from __future__ import annotations

import random

import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import dispersion
from specwatch.sim.acceptance import REQUEST_ICC, AcceptanceModel, Drop, plan_steps

from tests.support import captured_requests


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


def icc_by_kind(pairs_by_kind: dict[str, list[tuple[int, int]]]) -> dict[str, float]:
    """Per slice (prompt kind): between-request variance of acceptance over m (1 - m)."""
    out = {}
    for kind, pairs in pairs_by_kind.items():
        found = dispersion(pairs)
        if found is not None:
            out[kind] = found.between_sd**2 / (found.alpha * (1 - found.alpha))
    return out


def test_the_default_request_dispersion_is_the_real_draft_model_captures() -> None:
    """tests/fixtures' draft-model captures: per prompt kind, requests differ with an
    intra-slice correlation of 0.15-0.19 (Pearson dispersion ~10-13); the simulator's default
    is their mean."""
    by_kind: dict[str, list[tuple[int, int]]] = {}
    for captured in captured_requests("draft"):
        spec = captured.spec()
        if spec is not None:
            counts = Counts.of_request(spec.drafted, spec.accepted, 8)
            by_kind.setdefault(captured.kind, []).append((counts.accepted, counts.trials))
    iccs = icc_by_kind(by_kind)
    assert {"random", "loop", "junk"} == set(iccs)
    assert pytest.approx(sum(iccs.values()) / len(iccs), abs=0.02) == REQUEST_ICC
    everything = dispersion([pair for pairs in by_kind.values() for pair in pairs])
    assert everything is not None
    assert 8 < everything.pearson < 16  # far from the binomial 1


def test_the_simulator_draws_requests_with_the_dispersion_it_claims() -> None:
    rng = random.Random(7)
    model = AcceptanceModel(task_alpha={"chat": 0.6}, ctx_penalty=0.0, position_decay=1.0)
    pairs = []
    for _ in range(3000):
        steps = plan_steps(rng, model, 4, "chat", 10, 120, 0.0)
        counts = Counts.of_request(
            [s.drafted for s in steps if s.drafted], [s.accepted for s in steps if s.drafted], 4
        )
        pairs.append((counts.accepted, counts.trials))
    (icc,) = icc_by_kind({"chat": pairs}).values()
    assert pytest.approx(REQUEST_ICC, abs=0.03) == icc
    homogeneous = AcceptanceModel(
        task_alpha={"chat": 0.6}, ctx_penalty=0.0, position_decay=1.0, request_icc=0.0
    )
    alike = [plan_steps(rng, homogeneous, 4, "chat", 10, 120, 0.0) for _ in range(2000)]
    found = dispersion([
        (sum(s.accepted for s in steps), sum(s.accepted + (s.accepted < s.drafted) for s in steps))
        for steps in alike
    ])  # fmt: skip
    assert found is not None
    assert found.pearson < 1.3  # without the Beta, requests are binomial draws


def test_every_cause_the_simulator_makes_is_a_choice_of_sim_cause() -> None:
    from specwatch.cli.simulated import SIM_CAUSES
    from specwatch.sim.causes import SIMULATED

    assert set(SIMULATED) == set(SIM_CAUSES)
