"""[compiled] Causes read from what a request drafts step by step (analysis/causes/rules.py
assembles them).

Each rule states its minimum evidence here and in docs/causes.md; benchmarks/causes.py
measures its false rate on overdispersed healthy traffic and its detection on traffic that has
the cause.

- `not_drafting`: speculation is configured (vLLM attaches the speculative block) but the
  draft proposes ~nothing: per model and prompt ctx bucket, since the start, at least
  `IDLE_MIN_REQUESTS` requests with at least `IDLE_MIN_TOKENS` output tokens drafted at most
  `IDLE_MAX_SHARE` draft tokens per output token (an ngram drafter that never matches at long
  context; a drafter that failed to load); or, of at least `IDLE_MIN_REQUESTS` requests with
  `IDLE_MIN_OUTPUT` output tokens or more, surely most drafted at most `IDLE_MAX_SHARE` of
  their own tokens (the lower Wilson bound of that share, at `IDLE_SHARE_CONFIDENCE`
  two-sided, at least `IDLE_MIN_REQUEST_SHARE`: 22 of 30, 40 of 60): speculation off for most
  requests, the rest drafting normally (a gate on sampling parameters, a reasoning phase),
  which the pooled share misses (the drafting few lift it past 1%). An ngram drafter without a
  match for 40% of requests is named with a chance of 5e-5 at 30 requests. On the model
  rollup, naming the buckets, the share of requests and the tasks and sampling modes
  (greedy, sampled, default: a gate on sampling shows as the idle ones all `sampled`) of those
  that drafted nothing, and on its slices in them. A model none of whose requests drafted
  anything has no slice, but keeps its rollup (the analyzer adds one with no step) for the
  cause to stand on.
- `no_per_request_data`: vLLM counts speculative steps of a model (it is judged on vLLM's own
  counters) while at least `NO_DATA_MIN_REQUESTS` requests the proxy served it came back
  without the per-request speculative block and none with it: vLLM runs without the flags
  that attach it (`conventions.per_request_flags` names them for its version). On the model.
- `collapse_after_pause`: a request's acceptance after a stretch of steps that drafted nothing
  (K = 0 phases of a schedule, listed as steps with 0 drafted where the engine lists them) is
  far below before it (TensorRT-LLM#16888). Per model, since the start: at least
  `PAUSE_MIN_REQUESTS` requests with at least `PAUSE_MIN_TRIALS` trials on each side of their
  first pause, whose pooled alpha-hat after is at most `PAUSE_RATIO` of before and at least
  `PAUSE_GAP` lower. On the model rollup and its slices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specwatch.analysis.counting.stats import Interval, proportion_interval, wilson
from specwatch.analysis.counting.sums import Sums
from specwatch.conventions import Sampling

# not_drafting
IDLE_MIN_REQUESTS = 30
IDLE_MIN_TOKENS = 1000
IDLE_MAX_SHARE = 0.01
IDLE_MIN_OUTPUT = 16  # a request shorter than this counts in neither share
IDLE_MIN_REQUEST_SHARE = 0.5
IDLE_SHARE_CONFIDENCE = 0.98
# no_per_request_data
NO_DATA_MIN_REQUESTS = 3
# collapse_after_pause
PAUSE_MIN_REQUESTS = 10
PAUSE_MIN_TRIALS = 16
PAUSE_RATIO = 0.5
PAUSE_GAP = 0.2


@dataclass(frozen=True, slots=True)
class SamplingView:
    """A model's requests of one sampling mode: alpha-hat since the start and its interval."""

    requests: int
    accepted: int
    trials: int
    alpha: Interval | None


@dataclass(slots=True)
class _Idle:
    requests: int = 0
    output_tokens: int = 0
    drafted: int = 0
    measured: int = 0  # requests with IDLE_MIN_OUTPUT output tokens or more
    idle: int = 0  # of those, the ones that drafted at most IDLE_MAX_SHARE of their tokens
    tasks: dict[str, int] = field(default_factory=dict)  # the idle ones' tasks
    sampling: dict[str, int] = field(default_factory=dict)  # and how they asked to decode

    def not_drafting(self) -> bool:
        pooled = (
            self.requests >= IDLE_MIN_REQUESTS
            and self.output_tokens >= IDLE_MIN_TOKENS
            and self.drafted <= IDLE_MAX_SHARE * self.output_tokens
        )
        most = (
            self.measured >= IDLE_MIN_REQUESTS
            and wilson(self.idle, self.measured, IDLE_SHARE_CONFIDENCE)[0] >= IDLE_MIN_REQUEST_SHARE
        )
        return pooled or most


class DraftingTally:
    """Per model and prompt ctx bucket, what speculative requests drafted per output token
    (not_drafting), and per model the acceptance around their first pause
    (collapse_after_pause); since the start."""

    def __init__(self) -> None:
        self._idle: dict[str, dict[str, _Idle]] = {}
        # per model: requests served with the per-request block, and without it
        self.data: dict[str, list[int]] = {}
        # per model: requests with a pause, accepted and trials before it and after it
        self._pauses: dict[str, list[int]] = {}
        # per model and sampling mode: accepted over trials, requests the unit
        self._sampling: dict[str, dict[str, Sums]] = {}

    def drafting(
        self,
        model: str,
        ctx_bucket: str,
        task: str,
        drafted: int,
        output_tokens: int,
        sampling: str = Sampling.DEFAULT,
    ) -> None:
        """One request with speculation configured: what it drafted and put out."""
        buckets = self._idle.get(model)
        if buckets is None:
            buckets = self._idle[model] = {}
        idle = buckets.get(ctx_bucket)
        if idle is None:
            idle = buckets[ctx_bucket] = _Idle()
        idle.requests += 1
        idle.output_tokens += output_tokens
        idle.drafted += drafted
        if output_tokens >= IDLE_MIN_OUTPUT:
            idle.measured += 1
            if drafted <= IDLE_MAX_SHARE * output_tokens:
                idle.idle += 1
                idle.tasks[task] = idle.tasks.get(task, 0) + 1
                idle.sampling[sampling] = idle.sampling.get(sampling, 0) + 1

    def sampled(self, model: str, sampling: str, accepted: int, trials: int) -> None:
        """One request that drafted: its accepted tokens over its trials, by how it asked to
        decode."""
        modes = self._sampling.get(model)
        if modes is None:
            modes = self._sampling[model] = {}
        sums = modes.get(sampling)
        if sums is None:
            sums = modes[sampling] = Sums()
        sums.add(accepted, trials)

    def by_sampling(self, confidence: float) -> dict[str, dict[str, SamplingView]]:
        """Per model and sampling mode, accepted over trials since the start, its interval over
        requests (Wilson's on trials over the design effect)."""
        return {
            model: {
                mode: SamplingView(
                    int(sums.requests),
                    int(sums.x),
                    int(sums.y),
                    proportion_interval(
                        sums.requests, sums.x, sums.y, sums.xx, sums.xy, sums.yy, confidence
                    ),
                )
                for mode, sums in sorted(modes.items())
            }
            for model, modes in self._sampling.items()
        }

    def served(self, model: str, with_data: bool) -> None:
        """A request served to `model`, with the per-request block or without it."""
        counts = self.data.get(model)
        if counts is None:
            counts = self.data[model] = [0, 0]
        counts[0 if with_data else 1] += 1

    def without_data(self, model: str) -> int:
        """Requests served without the per-request block, when none came with it; 0 else."""
        counts = self.data.get(model)
        if counts is None or counts[0] or counts[1] < NO_DATA_MIN_REQUESTS:
            return 0
        return counts[1]

    def steps(self, model: str, drafted: tuple[int, ...], accepted: tuple[int, ...]) -> None:
        """One request's steps: around its first pause (steps that drafted nothing), if any."""
        if 0 not in drafted:
            return
        pause = drafted.index(0)
        resume = pause
        while resume < len(drafted) and drafted[resume] == 0:
            resume += 1
        before = _alpha_sums(drafted[:pause], accepted[:pause])
        after = _alpha_sums(drafted[resume:], accepted[resume:])
        if before[1] < PAUSE_MIN_TRIALS or after[1] < PAUSE_MIN_TRIALS:
            return
        sums = self._pauses.get(model)
        if sums is None:
            sums = self._pauses[model] = [0, 0, 0, 0, 0]
        sums[0] += 1
        sums[1] += before[0]
        sums[2] += before[1]
        sums[3] += after[0]
        sums[4] += after[1]

    def not_drafting(self, model: str) -> dict[str, Any] | None:
        """The prompt ctx buckets where `model` drafts ~nothing, with their figures."""
        found = {
            bucket: idle
            for bucket, idle in self._idle.get(model, {}).items()
            if idle.not_drafting()
        }
        if not found:
            return None
        measured = sum(idle.measured for idle in found.values())
        tasks: dict[str, int] = {}
        sampling: dict[str, int] = {}
        for idle in found.values():
            for task, n in idle.tasks.items():
                tasks[task] = tasks.get(task, 0) + n
            for mode, n in idle.sampling.items():
                sampling[mode] = sampling.get(mode, 0) + n
        return {
            "ctx_buckets": sorted(found),
            "requests": sum(idle.requests for idle in found.values()),
            "output_tokens": sum(idle.output_tokens for idle in found.values()),
            "drafted": sum(idle.drafted for idle in found.values()),
            # of the requests long enough to have drafted, the share that drafted ~nothing,
            # and their tasks (what they share, where the task tells them apart)
            "share": sum(idle.idle for idle in found.values()) / measured if measured else 0.0,
            "tasks": _most_first(tasks),
            "sampling": _most_first(sampling),
        }

    def collapse_after_pause(self, model: str) -> dict[str, Any] | None:
        sums = self._pauses.get(model)
        if sums is None or sums[0] < PAUSE_MIN_REQUESTS:
            return None
        before, after = sums[1] / sums[2], sums[3] / sums[4]
        if after <= PAUSE_RATIO * before and before - after >= PAUSE_GAP:
            return {"requests": sums[0], "alpha_before": before, "alpha_after": after}
        return None


def _most_first(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _alpha_sums(drafted: tuple[int, ...], accepted: tuple[int, ...]) -> tuple[int, int]:
    """(accepted, trials) of steps that drafted something."""
    total_a = trials = 0
    for d, a in zip(drafted, accepted, strict=True):
        if d:
            total_a += a
            trials += a + (a < d)
    return total_a, trials
