"""The simulator's draft model: how likely each draft token is accepted, and what a step costs.

Acceptance depends on the task, the context position (longer context, worse draft), the
draft position (later positions are accepted less often, given the earlier ones were), time (a
scheduled drop, for drift demos), and the request: real requests differ from each other far
more than tokens do, so each request draws its own acceptance around its slice's mean m, from a
Beta distribution with intra-slice correlation `request_icc`: variance icc * m (1 - m), i.e.
Beta(m (1/icc - 1), (1 - m) (1/icc - 1)). REQUEST_ICC by default, calibrated to the real vLLM
captures in tests/fixtures (tests/unit/sim/test_model.py checks both). Generation is seeded per
request, so the same request gives the same tokens and the same steps.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

# Between-request variance of acceptance over m (1 - m), in the real vLLM captures of
# tests/fixtures/vllm-0.32.0-cpu (the draft model, per prompt kind): the per-request sd is
# then 0.20 at a mean of 0.4, 0.19 at 0.6 and 0.13 at 0.88.
REQUEST_ICC = 0.17

DEFAULT_TASK_ALPHA: dict[str, float] = {
    "code": 0.88,
    "structured": 0.90,
    "tool_call": 0.86,
    "summarization": 0.80,
    "extraction": 0.78,
    "chat": 0.62,
    "reasoning": 0.60,
    "translation": 0.42,
}


@dataclass(frozen=True, slots=True)
class Drop:
    """From `after` seconds on, multiply acceptance by `factor` (for one task, or all)."""

    after: float
    factor: float
    task: str | None = None


@dataclass(frozen=True, slots=True)
class AcceptanceModel:
    task_alpha: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TASK_ALPHA))
    default_alpha: float = 0.65
    ctx_penalty: float = 0.05  # alpha falls by this much per doubling of context past 1k
    position_decay: float = 0.97
    no_draft_prob: float = 0.0  # ngram-like steps that found nothing to draft
    drops: tuple[Drop, ...] = ()
    request_icc: float = REQUEST_ICC  # 0: every request of a slice alike (a binomial model)
    # Causes of poor or suspicious acceptance (analysis/causes/rules.py), one switch each:
    # drafts past this absolute position accept nothing, zero-padded (vllm-project/vllm#34734)
    context_limit: int | None = None
    loop_share: float = 0.0  # requests caught in a repetition loop: every draft accepted
    accept_nothing: bool = False  # a broken draft: nothing accepted anywhere
    # draft positions from this one on accept nothing once the context reaches cliff_context
    # (vLLM#40898: a drafter's sliding-window layers run as full attention)
    cliff_position: int | None = None
    cliff_context: int = 0
    first_position_factor: float = 1.0  # position 1 alone accepts this much less (a tap off by one)
    idle_from: int | None = None  # prompts from this long on: the drafter never drafts
    # after this many output tokens, `pause_steps` steps that draft nothing (K = 0 phases of a
    # schedule, listed), after which acceptance is multiplied by `after_pause_factor`
    pause_at: int | None = None
    pause_steps: int = 8
    pause_share: float = 1.0  # of the requests that reach pause_at, the share that pauses
    after_pause_factor: float = 1.0
    # the engine switches speculation off for good this many seconds into the load (TensorRT-
    # LLM#12905's acceptance gate): speculation_switched_off
    switch_off_after: float | None = None
    # positions 2.. accept this (given the one before) whatever position 1 does (vLLM#51009)
    later_alpha: float | None = None
    # a draft head that no longer matches: every position accepts this (draft_mismatch)
    mismatch_alpha: float | None = None
    half_life: float | None = None  # acceptance halves every this many seconds of load

    def request_offset(self, rng: random.Random, mean: float) -> float:
        """This request's acceptance minus its slice's mean: a Beta draw around it."""
        if self.request_icc <= 0.0 or not 0.0 < mean < 1.0:
            return 0.0
        shape = 1.0 / min(self.request_icc, 0.99) - 1.0
        return rng.betavariate(mean * shape, (1.0 - mean) * shape) - mean

    def alpha(self, task: str, ctx: int, elapsed: float) -> float:
        base = self.task_alpha.get(task, self.default_alpha)
        value = base - self.ctx_penalty * math.log2(1.0 + ctx / 1024.0)
        for drop in self.drops:
            if elapsed >= drop.after and (drop.task is None or drop.task == task):
                value *= drop.factor
        if self.half_life is not None:
            value *= 0.5 ** (elapsed / self.half_life)
        return min(0.99, max(0.01, value))


@dataclass(frozen=True, slots=True)
class CostModel:
    """Step latency: a target forward pass costs `target_step_ms`; drafting K costs K*c of it.

    `batch_compute` (0: off) makes the step grow with the batch: each other request in flight
    adds that share of a step per token verified (K + 1), as compute does once a GPU is no
    longer memory-bound, so speculation that pays at batch 1 stops paying at a large batch.
    """

    target_step_ms: float = 4.0
    draft_cost_ratio: float = 0.05
    prefill_ms_per_token: float = 0.005
    batch_compute: float = 0.0
    # a step listed with K = 0 (a schedule's K = 0 row, a pause) still runs the drafter at the
    # configured K (vLLM#51510): k0_still_costs
    k0_costs: bool = False

    def prefill_seconds(self, prompt_tokens: int) -> float:
        return (self.target_step_ms + self.prefill_ms_per_token * prompt_tokens) / 1000.0

    def step_seconds(self, k: int, batch: int = 1) -> float:
        load = self.batch_compute * max(0, batch - 1) * (k + 1)
        return self.target_step_ms * (1.0 + k * self.draft_cost_ratio + load) / 1000.0

    def of_step(self, step: Step, configured: int, batch: int) -> float:
        """A step's seconds: one listed at K = 0 drafts `configured` where `k0_costs`."""
        k0 = configured if step.listed and self.k0_costs else 0
        return self.step_seconds(step.drafted or k0, batch)


@dataclass(frozen=True, slots=True)
class Step:
    """One engine step after prefill: `drafted` 0 means a plain (unlisted) decode step, but
    for a `listed` one (a K = 0 phase that the engine lists)."""

    drafted: int
    accepted: int
    emitted: int
    listed: bool = False


def plan_steps(
    rng: random.Random,
    model: AcceptanceModel,
    k: int,
    task: str,
    prompt_tokens: int,
    max_tokens: int,
    elapsed: float,
) -> list[Step]:
    """The engine steps that emit tokens 2..max_tokens (token 1 comes from prefill)."""
    steps: list[Step] = []
    emitted = 1
    offset = model.request_offset(rng, model.alpha(task, prompt_tokens + 1, elapsed))
    looping = bool(model.loop_share) and rng.random() < model.loop_share
    limit = model.context_limit
    idle = model.idle_from is not None and prompt_tokens >= model.idle_from
    if model.switch_off_after is not None and elapsed >= model.switch_off_after:
        idle = True
    # a request that is not to pause counts as paused already
    paused, factor = model.pause_share < 1.0 and rng.random() >= model.pause_share, 1.0
    while emitted < max_tokens:
        if idle or (model.no_draft_prob and rng.random() < model.no_draft_prob):
            steps.append(Step(drafted=0, accepted=0, emitted=1))
            emitted += 1
            continue
        if model.pause_at is not None and not paused and emitted >= model.pause_at:
            paused, factor = True, model.after_pause_factor
            for _ in range(min(model.pause_steps, max_tokens - emitted)):
                steps.append(Step(drafted=0, accepted=0, emitted=1, listed=True))
                emitted += 1
            continue
        alpha = min(0.99, max(0.01, model.alpha(task, prompt_tokens + emitted, elapsed) + offset))
        accepted = 0
        p = alpha * factor * model.first_position_factor
        if model.mismatch_alpha is not None:
            p = model.mismatch_alpha
        if looping:
            accepted = k
        elif model.accept_nothing or (limit is not None and prompt_tokens + emitted > limit):
            p = 0.0
        cliff = model.cliff_position
        if cliff is not None and prompt_tokens + emitted < model.cliff_context:
            cliff = None
        while accepted < k and rng.random() < p:
            accepted += 1
            p = alpha * factor * model.position_decay**accepted
            if model.later_alpha is not None or model.mismatch_alpha is not None:
                p = model.later_alpha or model.mismatch_alpha or 0.0
            if cliff is not None and accepted + 1 >= cliff:
                p = 0.0
        # The last step may run past max_tokens: vLLM truncates the output, not the count.
        out = min(accepted + 1, max_tokens - emitted)
        steps.append(Step(drafted=k, accepted=accepted, emitted=out))
        emitted += out
    return steps
