"""[compiled] Why a slice's acceptance is poor or suspicious: named causes, each with its own rule.

A zone says whether speculation pays in a slice; a cause says what to do about it. Each
detector reads what the analysis already has (the steps' own positions, per-request sums, the
config) and states its rule and its minimum evidence here; its detection rate on data that has
the cause and its false rate on overdispersed healthy traffic are measured by
benchmarks/causes.py (docs/causes.md has the figures and the runbook has each cause's fix).

- `draft_context_limit`: vLLM zero-pads drafts past the drafter's context limit and still
  counts them (vllm-project/vllm#34734): the rule in analysis/causes/positions.py; every slice
  whose ctx bucket reaches past that position carries it.
- `no_acceptance`: the window's request-level upper bound of alpha-hat is at most 0.02, past
  the zone gates (`zones.min_requests`, `zones.min_trials`), and no context limit explains it.
- `repetition_suspected`: requests that accept nearly everything (alpha-hat >= 0.99 over at
  least 32 trials: the `high` extreme, vLLM#44487) lift the slice over a zone threshold: at
  least 3 in the window, without them the slice's alpha-hat is at least 0.05 lower, and a
  threshold (`zones.green` or `zones.red`) lies between the two, past the zone gates. A
  healthy slice of high acceptance has many near-perfect requests too; only a lift that
  changes the verdict is the cause an operator must know of.
- `synthetic_verifier` / `lossy_verifier`: from the config (`rejection_sample_method:
  synthetic`; a relaxed acceptance rule): acceptance is not the target's; such slices get zone
  `not_applicable` and no alert.
- `schedule_not_applied`: a `num_speculative_tokens_per_batch_size` schedule is configured but
  the steps of requests started at a batch size it gives a shorter K drafted more than that K
  in at least half of at least 200 such steps from at least 10 requests (vLLM drops the
  schedule under data parallelism). The batch size is the requests the proxy had in flight at
  that upstream: a vLLM also serving others runs larger batches, at which a decreasing schedule
  gives a shorter K still, so an applied schedule is not flagged for it.
- `engine_disagreement`: vLLM's per-request `mean_acceptance_length` differs from 1 + accepted
  / steps of its own arrays by more than 0.01 (rounding) in at least 5 requests and 5% of
  those that report it, since the start (vLLM#56101 over-counts at EOS in some versions).
- `position_cliff`, `later_positions_collapse`, `first_position_deficit`: by draft position,
  each rule in analysis/causes/positions.py (with draft_context_limit's positions);
  `not_drafting`, `collapse_after_pause`: from what a request drafts step by step, in
  analysis/causes/drafting.py; `speculation_switched_off`, `draft_mismatch`,
  `decay_over_uptime`: against the model's time, in analysis/causes/lifetime.py;
  `k0_still_costs`: step times, in analysis/speed/k0_cost.py (fed by the goodput tracker).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from specwatch import conventions as C
from specwatch.analysis.causes.drafting import DraftingTally, SamplingView
from specwatch.analysis.causes.lifetime import Lifetime
from specwatch.analysis.causes.positions import (
    CliffContexts,
    ContextPositions,
    FirstPositions,
    SliceCliffs,
)
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import CtxBuckets, slice_key
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.analysis.speed.k0_cost import K0Cost
from specwatch.core.records import RequestRecord, SliceKey, SpecConfig, SpecDecodeBlock
from specwatch.settings import Settings

Kind = C.CauseKind

# no_acceptance
NO_ACCEPTANCE_UPPER = 0.02
# extremes and repetition_suspected
EXTREME_MIN_TRIALS = 32
EXTREME_HIGH = 0.99
EXTREME_LOW = 0.03
REPETITION_MIN_REQUESTS = 3
REPETITION_MIN_SHIFT = 0.05
MAX_EXTREMES_KEPT = 10_000  # per slice, in the window
# schedule_not_applied
SCHEDULE_MIN_STEPS = 200
SCHEDULE_MIN_REQUESTS = 10
SCHEDULE_OVER_SHARE = 0.5
# engine_disagreement
TAU_TOLERANCE = 0.01
DISAGREEMENT_MIN_REQUESTS = 5
DISAGREEMENT_MIN_SHARE = 0.05

_VERIFIER_CAUSES = {"synthetic": Kind.SYNTHETIC_VERIFIER, "lossy": Kind.LOSSY_VERIFIER}


@dataclass(frozen=True, slots=True)
class Cause:
    kind: str
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.detail}


def extreme_kind(accepted: int, trials: int, drafted: int) -> str | None:
    """`high` / `low` for a request that accepted nearly all / nearly none of what it tried."""
    if trials >= EXTREME_MIN_TRIALS and accepted >= EXTREME_HIGH * trials:
        return C.Extreme.HIGH
    if drafted >= EXTREME_MIN_TRIALS and accepted <= EXTREME_LOW * trials:
        return C.Extreme.LOW
    return None


class _Extremes:
    """A slice's extreme requests in the window: (ts, kind, accepted, trials)."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: deque[tuple[float, str, int, int]] = deque(maxlen=MAX_EXTREMES_KEPT)

    def recent(self, since: float, kind: str) -> tuple[int, int, int]:
        """(requests, accepted, trials) of the `kind` extremes at or after `since`."""
        entries = self.entries
        while entries and entries[0][0] < since:
            entries.popleft()
        n = accepted = trials = 0
        for _, k, a, t in entries:
            if k == kind:
                n, accepted, trials = n + 1, accepted + a, trials + t
        return n, accepted, trials


@dataclass(slots=True)
class _ModelTally:
    """Since the start, per model: the schedule's compliance and vLLM's own tau."""

    schedule_steps: int = 0
    schedule_over: int = 0
    schedule_requests: int = 0
    reported: int = 0  # requests that reported a mean acceptance length
    disagreeing: int = 0
    reported_sum: float = 0.0  # of the disagreeing ones
    recomputed_sum: float = 0.0
    extremes: dict[str, int] = field(default_factory=dict)  # kind -> requests, since start


class CauseTracker:
    """What the detectors need, kept as requests arrive; `causes` reads a slice's at a moment."""

    def __init__(
        self,
        buckets: CtxBuckets,
        settings: Settings,
        since_start: SlidingWindow[SliceKey],
        k0: K0Cost,
    ) -> None:
        zones = settings.zones
        self._drafting = DraftingTally()
        self._cliffs = SliceCliffs(since_start, buckets)  # from each slice's counts since start
        self._firsts = FirstPositions()
        self._lifetime = Lifetime(settings.window.length_seconds)
        self._k0 = k0  # the goodput tracker's: it has each request's decode time and steps
        self._confidence = zones.confidence
        self._thresholds = (zones.green, zones.red)  # a lift over one is a changed verdict
        self._buckets = buckets
        self._window = settings.window.length_seconds
        self._config: SpecConfig | None = None
        self._positions: dict[str, ContextPositions] = {}
        self._depths: dict[str, CliffContexts] = {}  # position_cliff from a context on
        self._extremes: dict[SliceKey, _Extremes] = {}
        self._models: dict[str, _ModelTally] = {}

    def set_config(self, config: SpecConfig | None) -> None:
        self._config = config

    @property
    def verifier_cause(self) -> Cause | None:
        """A synthetic or lossy verifier: every slice's acceptance is not comparable."""
        config = self._config
        kind = None if config is None else _VERIFIER_CAUSES.get(config.verifier)
        if config is None or kind is None:
            return None
        return Cause(kind, {"rejection_sample_method": config.rejection_sample_method})

    @property
    def models(self) -> list[str]:
        return sorted(self._models)

    def drafting(self, model: str, record: RequestRecord, spec: SpecDecodeBlock) -> None:
        """A request with speculation configured, whether or not it drafted: not_drafting,
        speculation_switched_off."""
        prompt, tokens = record.prompt_tokens, record.completion_tokens or 0
        label = C.UNKNOWN_CTX if prompt is None else self._buckets.label(prompt)
        drafted = sum(spec.drafted)
        sampling = record.sampling or C.Sampling.DEFAULT
        self._drafting.drafting(model, label, record.task, drafted, tokens, sampling)
        self._lifetime.drafting(model, record.ts, drafted, tokens)

    def served(self, model: str, with_data: bool) -> None:
        """A request served to `model` (an answer of vLLM's, not an error)."""
        self._drafting.served(model, with_data)

    def no_data(self, model: str) -> Cause | None:
        """`no_per_request_data` for a model vLLM counts steps of (the caller knows)."""
        requests = self._drafting.without_data(model)
        if not requests:
            return None
        version = None if self._config is None else self._config.vllm_version
        flags = list(C.per_request_flags(version))
        detail = {"requests": requests, "vllm_version": version, "flags": flags}
        return Cause(Kind.NO_PER_REQUEST_DATA, detail)

    def per_request_data(self) -> dict[str, tuple[int, int]]:
        """Per model, requests served with vLLM's per-request block and without it."""
        return {model: (counts[0], counts[1]) for model, counts in self._drafting.data.items()}

    def extremes(self, model: str) -> dict[str, int]:
        tally = self._models.get(model)
        return {} if tally is None else dict(tally.extremes)

    def sampling(self) -> dict[str, dict[str, SamplingView]]:
        """Per model and sampling mode, since the start: alpha-hat and its interval."""
        return self._drafting.by_sampling(self._confidence)

    def add(
        self,
        model: str,
        record: RequestRecord,
        spec: SpecDecodeBlock,
        parts: dict[SliceKey, Counts],
    ) -> None:
        """One speculative request that drafted: `parts` its counts per slice, the model's
        rollup (its whole counts) included."""
        ts, prompt, in_flight = record.ts, record.prompt_tokens, record.in_flight
        whole = parts[slice_key(model, C.ALL, C.ALL)]
        tally = self._models.get(model)
        if tally is None:
            tally = self._models[model] = _ModelTally()
        if prompt is not None:
            positions = self._positions.get(model)
            if positions is None:
                positions = self._positions[model] = ContextPositions()
            positions.add(prompt, spec)
            depths = self._depths.get(model)
            if depths is None:
                depths = self._depths[model] = CliffContexts()
            depths.add(prompt, spec)
        kind = extreme_kind(whole.accepted, whole.trials, whole.drafted)
        if kind is not None:
            tally.extremes[kind] = tally.extremes.get(kind, 0) + 1
            for key, counts in parts.items():
                extremes = self._extremes.get(key)
                if extremes is None:
                    extremes = self._extremes[key] = _Extremes()
                extremes.entries.append((ts, kind, counts.accepted, counts.trials))
        if spec.reported_tau is not None and spec.steps:
            recomputed = 1.0 + sum(spec.accepted) / spec.steps
            tally.reported += 1
            if abs(spec.reported_tau - recomputed) > TAU_TOLERANCE:
                tally.disagreeing += 1
                tally.reported_sum += spec.reported_tau
                tally.recomputed_sum += recomputed
        self._schedule(tally, spec, in_flight)
        self._drafting.steps(model, spec.drafted, spec.accepted)
        self._firsts.add(model, whole)
        sliced = {(k.ctx_bucket, k.task): (c.accepted, c.trials) for k, c in parts.items()}
        sliced.pop((C.ALL, C.ALL), None)
        self._lifetime.add(model, ts, sliced, whole.accepted, whole.trials)
        sampling = record.sampling or C.Sampling.DEFAULT
        self._drafting.sampled(model, sampling, whole.accepted, whole.trials)

    def _schedule(self, tally: _ModelTally, spec: SpecDecodeBlock, in_flight: int | None) -> None:
        config = self._config
        if config is None or not config.schedule or in_flight is None:
            return
        longest = max(k for _, _, k in config.schedule)
        planned = next((k for lo, hi, k in config.schedule if lo <= in_flight <= hi), None)
        if planned is None or planned >= longest:
            return  # at that batch size the schedule drafts the most: nothing to tell by
        tally.schedule_steps += spec.steps
        tally.schedule_over += sum(1 for d in spec.drafted if d > planned)
        tally.schedule_requests += 1

    def causes(
        self, key: SliceKey, window: Counts, stats: SliceStats, gates: tuple[int, int], now: float
    ) -> tuple[Cause, ...]:
        """The causes of `key` at `now`, from its window's `window` counts and `stats`;
        `gates`: the zone gates (requests, trials) no_acceptance needs."""
        out: list[Cause] = []
        verifier = self.verifier_cause
        if verifier is not None:
            out.append(verifier)
        rollup = key.ctx_bucket == C.ALL
        positions = self._positions.get(key.model)
        cliff = None if positions is None else positions.cliff()
        if cliff is not None and (rollup or self._buckets.reaches(key.ctx_bucket, cliff)):
            out.append(Cause(Kind.DRAFT_CONTEXT_LIMIT, {"position": cliff}))
        alpha = stats.alpha
        if (
            cliff is None
            and alpha is not None
            and alpha.upper <= NO_ACCEPTANCE_UPPER
            and window.requests >= gates[0]
            and window.trials >= gates[1]
        ):
            out.append(Cause(Kind.NO_ACCEPTANCE, {"upper": alpha.upper}))
        repetition = self._repetition(key, window, now, gates)
        if repetition is not None:
            out.append(repetition)
        out.extend(self._step_causes(key, rollup))
        tally = self._models.get(key.model)
        if tally is not None:
            out.extend(self._model_causes(tally, rollup))
        return tuple(out)

    def _step_causes(self, key: SliceKey, rollup: bool) -> list[Cause]:
        out = []
        cliff = self._cliffs.position_cliff(key, self._depths.get(key.model))
        if cliff is not None:
            out.append(Cause(Kind.POSITION_CLIFF, cliff))
        collapse = self._cliffs.collapse(key)
        if collapse is not None:
            out.append(Cause(Kind.LATER_POSITIONS_COLLAPSE, collapse))
        deficit = self._firsts.deficit(key.model)
        positions = self._positions.get(key.model)
        if deficit is not None and (positions is None or positions.cliff() is None):
            out.append(Cause(Kind.FIRST_POSITION_DEFICIT, deficit))
        model, config = key.model, self._config
        switched = self._lifetime.switched_off(model, config)
        if switched is not None:
            out.append(Cause(Kind.SPECULATION_SWITCHED_OFF, switched))
        idle = None if switched is not None else self._drafting.not_drafting(model)
        if idle is not None and (rollup or key.ctx_bucket in idle["ctx_buckets"]):
            out.append(Cause(Kind.NOT_DRAFTING, idle))
        paused = self._drafting.collapse_after_pause(model)
        if paused is not None:
            out.append(Cause(Kind.COLLAPSE_AFTER_PAUSE, paused))
        for kind, found in (
            (Kind.DRAFT_MISMATCH, self._lifetime.mismatch(model, config)),
            (Kind.DECAY_OVER_UPTIME, self._lifetime.decay(model)),
            (Kind.K0_STILL_COSTS, self._k0.still_costs(model)),
        ):
            if found is not None:
                out.append(Cause(kind, found))
        return out

    def _repetition(
        self, key: SliceKey, window: Counts, now: float, gates: tuple[int, int]
    ) -> Cause | None:
        extremes = self._extremes.get(key)
        if extremes is None or window.requests < gates[0] or window.trials < gates[1]:
            return None  # no verdict below the gates: none to be lifted
        n, accepted, trials = extremes.recent(now - self._window, C.Extreme.HIGH)
        rest = window.trials - trials
        if n < REPETITION_MIN_REQUESTS or rest <= 0:
            return None
        alpha = window.accepted / window.trials
        without = (window.accepted - accepted) / rest
        if alpha - without < REPETITION_MIN_SHIFT:
            return None
        if not any(without < threshold <= alpha for threshold in self._thresholds):
            return None
        share = n / window.requests if window.requests else 1.0
        return Cause(
            Kind.REPETITION_SUSPECTED,
            {"requests": n, "share": min(share, 1.0), "alpha": alpha, "alpha_without": without},
        )

    def _model_causes(self, tally: _ModelTally, rollup: bool) -> list[Cause]:
        out = []
        if (
            tally.schedule_steps >= SCHEDULE_MIN_STEPS
            and tally.schedule_requests >= SCHEDULE_MIN_REQUESTS
            and tally.schedule_over >= SCHEDULE_OVER_SHARE * tally.schedule_steps
        ):
            config = self._config
            out.append(
                Cause(
                    Kind.SCHEDULE_NOT_APPLIED,
                    {
                        "steps": tally.schedule_steps,
                        "over_share": tally.schedule_over / tally.schedule_steps,
                        "schedule": [] if config is None else [list(r) for r in config.schedule],
                    },
                )
            )
        if (
            rollup
            and tally.disagreeing >= DISAGREEMENT_MIN_REQUESTS
            and tally.disagreeing >= DISAGREEMENT_MIN_SHARE * tally.reported
        ):
            out.append(
                Cause(
                    Kind.ENGINE_DISAGREEMENT,
                    {
                        "requests": tally.disagreeing,
                        "share": tally.disagreeing / tally.reported,
                        "reported_tau": tally.reported_sum / tally.disagreeing,
                        "recomputed_tau": tally.recomputed_sum / tally.disagreeing,
                        "vllm_version": None if self._config is None else self._config.vllm_version,
                    },
                )
            )
        return out
