"""[compiled] Causes read against the model's time since its first request (analysis/causes/rules.py
assembles them): what changed over the pod's life, or was wrong from its start.

Each rule states its minimum evidence here and in docs/causes.md; benchmarks/causes.py
measures its false rate on overdispersed healthy traffic and its detection on traffic that has
the cause. Each is a cause of the model: on its rollup and every slice of it.

- `speculation_switched_off`: the engine stopped drafting for good (TensorRT-LLM#12905 turns
  speculation off when its rolling acceptance falls below `acceptance_rate_threshold`): the
  latest `SWITCH_MIN_REQUESTS` requests or more of `IDLE_MIN_OUTPUT` output tokens, in a row
  and over at least a window (`window.length_seconds`: by then the window drafted nothing),
  drafted at most `IDLE_MAX_SHARE` of their tokens, while
  of the `SWITCH_MIN_BEFORE` or more before them at least `SWITCH_BEFORE_SHARE` drafted. With
  30% of requests drafting nothing (an ngram drafter without a match) thirty in a row come by
  chance once in 5e15; a gate that keeps most requests from drafting from the start is
  `not_drafting`, not this. Named with the time the run began (`stopped_at`) and the config's
  gate where it sets one.
- `draft_mismatch`: near-zero acceptance from the first request on (a converted or quantized
  checkpoint whose draft head no longer matches: vLLM#43455, 1.82% against 80.56%): the
  model's first `MISMATCH_FIRST` requests that tried a draft token accepted at most
  `MISMATCH_MAX` of at least `MISMATCH_MIN_TRIALS` trials, and so did all since. A draft that
  once worked and broke later is `no_acceptance` alone. Named with the config's identity.
- `decay_over_uptime`: acceptance slides down over the pod's life in every slice alike
  (vllm-ascend#13523, #10495), which slice drift sees late and one slice at a time. Time since the
  model's first request in bins of a sixth of the window (neighbours merge, a bin doubling, past
  `DECAY_MAX_BINS`); from `DECAY_MIN_BINS` bins on (two windows), the first third of the bins
  against the last, slice by slice: each third's accepted tokens over what its trials would accept
  at the slice's own alpha-hat over all thirds (a ratio R, so a change in the traffic mix moves
  nothing), its variance over requests (the cluster-robust ratio variance, requests the unit).
  Named when the last third's R is at most `DECAY_RATIO` of the first's, the middle third's R lies
  between them (a slide, not a blip), each third has `DECAY_MIN_REQUESTS` requests, and the fall's
  z on the log scale is at least `DECAY_Z`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from specwatch.analysis.causes.drafting import IDLE_MAX_SHARE, IDLE_MIN_OUTPUT
from specwatch.core.records import SpecConfig

# speculation_switched_off
SWITCH_MIN_REQUESTS = 30
SWITCH_MIN_BEFORE = 30
SWITCH_BEFORE_SHARE = 0.5
# draft_mismatch
MISMATCH_FIRST = 30
MISMATCH_MIN_TRIALS = 300
MISMATCH_MAX = 0.05
# decay_over_uptime
DECAY_BINS_PER_WINDOW = 6
DECAY_MAX_BINS = 96
DECAY_MIN_BINS = 12
DECAY_MIN_REQUESTS = 30
DECAY_RATIO = 0.7
DECAY_Z = 4.0
_MOMENTS = 6  # per slice and bin: requests, accepted, trials, a^2, a x t, t^2


@dataclass(slots=True)
class _Model:
    # speculation_switched_off: requests before the latest idle run, those of them that drafted,
    # and the run (requests, its first and last time)
    before: int = 0
    before_drafting: int = 0
    run: int = 0
    run_start: float = 0.0
    run_last: float = 0.0
    # draft_mismatch: the first requests that tried a draft token, and all since
    first: list[int] = field(default_factory=lambda: [0, 0, 0])  # requests, accepted, trials
    total: list[int] = field(default_factory=lambda: [0, 0, 0])
    # decay_over_uptime: the first request's time, the bins' width, per slice the moments
    origin: float | None = None
    width: float = 0.0
    bins: int = 0
    slices: dict[tuple[str, str], list[float]] = field(default_factory=dict)


class Lifetime:
    """Per model, since its first request: its idle runs, its first requests' acceptance and
    its slices' acceptance over time."""

    def __init__(self, window_seconds: float) -> None:
        self._window = window_seconds
        self._models: dict[str, _Model] = {}

    def _model(self, model: str) -> _Model:
        found = self._models.get(model)
        if found is None:
            found = self._models[model] = _Model(width=self._window / DECAY_BINS_PER_WINDOW)
        return found

    def drafting(self, model: str, ts: float, drafted: int, tokens: int) -> None:
        """A request with speculation configured: did it draft (of enough output to tell)?"""
        if tokens < IDLE_MIN_OUTPUT:
            return
        m = self._model(model)
        if drafted <= IDLE_MAX_SHARE * tokens:
            if not m.run:
                m.run_start = ts
            m.run += 1
            m.run_last = max(m.run_last, ts)
            return
        m.before += m.run + 1
        m.before_drafting += 1
        m.run = 0

    def add(
        self,
        model: str,
        ts: float,
        parts: dict[tuple[str, str], tuple[int, int]],
        accepted: int,
        trials: int,
    ) -> None:
        """One request that drafted: its (accepted, trials) per slice (ctx bucket, task), and
        over the request."""
        m = self._model(model)
        if trials:
            if m.first[0] < MISMATCH_FIRST:
                m.first[0] += 1
                m.first[1] += accepted
                m.first[2] += trials
            m.total[0] += 1
            m.total[1] += accepted
            m.total[2] += trials
        if m.origin is None:
            m.origin = ts
        index = int(max(0.0, ts - m.origin) / m.width)
        while index >= DECAY_MAX_BINS:
            _halve(m)
            index = int(max(0.0, ts - m.origin) / m.width)
        m.bins = max(m.bins, index + 1)
        for key, (a, t) in parts.items():
            if not t:
                continue
            moments = m.slices.get(key)
            if moments is None:
                moments = m.slices[key] = [0.0] * (DECAY_MAX_BINS * _MOMENTS)
            at = index * _MOMENTS
            moments[at] += 1
            moments[at + 1] += a
            moments[at + 2] += t
            moments[at + 3] += a * a
            moments[at + 4] += a * t
            moments[at + 5] += t * t

    def switched_off(self, model: str, config: SpecConfig | None) -> dict[str, Any] | None:
        m = self._models.get(model)
        if (
            m is None
            or m.run < SWITCH_MIN_REQUESTS
            or m.run_last - m.run_start < self._window
            or m.before < SWITCH_MIN_BEFORE
            or m.before_drafting < SWITCH_BEFORE_SHARE * m.before
        ):
            return None
        return {
            "stopped_at": m.run_start,
            "requests": m.run,
            "drafting_share_before": m.before_drafting / m.before,
            "gate": None if config is None else config.gate,
        }

    def mismatch(self, model: str, config: SpecConfig | None) -> dict[str, Any] | None:
        m = self._models.get(model)
        if m is None:
            return None
        first, total = m.first, m.total
        if (
            first[0] < MISMATCH_FIRST
            or first[2] < MISMATCH_MIN_TRIALS
            or first[1] > MISMATCH_MAX * first[2]
            or total[1] > MISMATCH_MAX * total[2]
        ):
            return None
        return {
            "alpha_first": first[1] / first[2],
            "alpha": total[1] / total[2],
            "requests": total[0],
            **_identity(config),
        }

    def decay(self, model: str) -> dict[str, Any] | None:
        m = self._models.get(model)
        if m is None or m.bins < DECAY_MIN_BINS:
            return None
        third = m.bins // 3
        spans = ((0, third), (third, m.bins - third), (m.bins - third, m.bins))
        thirds = [_Third() for _ in spans]
        for moments in m.slices.values():
            sums = [[0.0] * _MOMENTS for _ in spans]
            for side, (lo, hi) in zip(sums, spans, strict=True):
                for b in range(lo, hi):
                    at = b * _MOMENTS
                    for i in range(_MOMENTS):
                        side[i] += moments[at + i]
            accepted = sum(side[1] for side in sums)
            trials = sum(side[2] for side in sums)
            if accepted <= 0 or trials <= 0:
                continue
            p = accepted / trials  # the slice's own alpha-hat: what each third is held to
            for part, side in zip(thirds, sums, strict=True):
                part.add(side, p)
        early, middle, late = thirds
        r_early, r_middle, r_late = early.ratio(), middle.ratio(), late.ratio()
        if r_early is None or r_middle is None or r_late is None:
            return None
        variance = early.log_variance(r_early) + late.log_variance(r_late)
        if variance <= 0:
            return None
        ratio = r_late / r_early
        z = math.log(r_early / r_late) / math.sqrt(variance)
        if ratio > DECAY_RATIO or z < DECAY_Z or not r_late <= r_middle <= r_early:
            return None
        return {
            "ratio": ratio,
            "z": z,
            "alpha_early": early.accepted / early.trials,
            "alpha_late": late.accepted / late.trials,
            "uptime_seconds": m.bins * m.width,
        }


@dataclass(slots=True)
class _Third:
    """A third of the model's life over its slices: requests, accepted, trials, what the trials
    would accept at each slice's own alpha-hat (E), and the pieces of the robust variance."""

    requests: float = 0.0
    accepted: float = 0.0
    trials: float = 0.0
    expected: float = 0.0
    aa: float = 0.0  # sum accepted^2
    pat: float = 0.0  # sum p accepted trials
    ppt: float = 0.0  # sum p^2 trials^2

    def add(self, side: list[float], p: float) -> None:
        self.requests += side[0]
        self.accepted += side[1]
        self.trials += side[2]
        self.expected += p * side[2]
        self.aa += side[3]
        self.pat += p * side[4]
        self.ppt += p * p * side[5]

    def ratio(self) -> float | None:
        if self.requests < DECAY_MIN_REQUESTS or self.expected <= 0 or self.accepted <= 0:
            return None
        return self.accepted / self.expected

    def log_variance(self, r: float) -> float:
        """The variance of ln R over requests: sum (a - R E_i)^2 / E^2, n / (n - 1), over R^2."""
        residual = max(0.0, self.aa - 2.0 * r * self.pat + r * r * self.ppt)
        n = self.requests
        return residual / (self.expected * self.expected) * n / (n - 1.0) / (r * r)


def _halve(m: _Model) -> None:
    """Merge neighbouring bins: the width doubles, the bins' count halves."""
    m.width *= 2.0
    for moments in m.slices.values():
        for b in range(DECAY_MAX_BINS // 2):
            to, lo, hi = b * _MOMENTS, 2 * b * _MOMENTS, (2 * b + 1) * _MOMENTS
            for i in range(_MOMENTS):
                moments[to + i] = moments[lo + i] + moments[hi + i]
        for i in range(DECAY_MAX_BINS // 2 * _MOMENTS, DECAY_MAX_BINS * _MOMENTS):
            moments[i] = 0.0
    m.bins = (m.bins + 1) // 2


def _identity(config: SpecConfig | None) -> dict[str, Any]:
    """The config's identity: what to compare with the checkpoint that worked."""
    if config is None:
        return {"config": None}
    return {
        "config": config.id,
        "method": config.method,
        "draft": config.draft,
        "num_speculative_tokens": config.num_speculative_tokens,
        "vllm_version": config.vllm_version,
    }
