"""[compiled] Goodput: what users feel of speculation, decode time per output token (TPOT).

Acceptance is what a zone watches; a config change is judged by what users pay, latency and
throughput: a cheaper draft that accepts less can be faster for everyone, a longer K that
accepts as much can be slower at a high batch size.

Per request: its decode seconds (the generation time after the first token) and decode tokens
(output tokens - 1), from vLLM's per-request metrics (`generation_time_ms`, else `mean_itl_ms`
times the tokens), or where vLLM gives none from the stream's own timing (first byte to the
end: `tpot_source` says which), and its engine steps (vLLM's speculative steps).

Per cell (model x the prompt's ctx bucket x task x load bucket: the requests in flight at the
upstream when it started, as analysis/speed/load.py buckets them) the sums over requests of decode
seconds, tokens and steps with their second moments, over the window and since the start:
TPOT is the ratio estimator sum(seconds) / sum(tokens) (a long answer weighs by its tokens),
the engine step time sum(seconds) / sum(steps). The interval is over requests (the
cluster-robust variance of analysis/counting/stats.py) on the log scale, exp(+-t sqrt(v) / TPOT)
with Student's t on requests - 1: a time is positive and its error multiplicative, and the log
scale covers better where requests are few and skewed (benchmarks/goodput.py measures both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specwatch import conventions as C
from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets
from specwatch.analysis.counting.stats import Interval, robust_variance, t_quantile
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.counting.windows import WindowedRatio
from specwatch.analysis.speed.draft_cost import DraftCost
from specwatch.analysis.speed.k0_cost import K0Cost
from specwatch.analysis.speed.speedup import ASSUMED, ESTIMATED, Cost
from specwatch.core.records import RequestRecord, SpecDecodeBlock
from specwatch.settings import Settings

MAX_EXPONENT = 700.0  # math.exp past ~709 overflows: an interval that wide is no interval
UNKNOWN_LOAD = "unknown"  # a request whose in-flight count was not recorded (an old log)

# (model, prompt's ctx bucket, task, load bucket)
Cell = tuple[str, str, str, str]


def decode_of(record: RequestRecord) -> tuple[float, int] | None:
    """A request's decode seconds and decode tokens; None when it has no time per output token
    or fewer than two output tokens (nothing decoded after the first)."""
    tpot, tokens = record.latency.tpot, record.completion_tokens
    if tpot is None or tokens is None or tokens < 2 or not 0 <= tpot or math.isinf(tpot):
        return None  # (isinf, not isfinite: the compiled build's idiom)
    return tpot * (tokens - 1), tokens - 1


def decode_steps(spec: SpecDecodeBlock, tokens: int) -> int:
    """A request's engine steps after its first token: the steps vLLM lists (each drafted)
    and those it does not (a plain decode step, one token each: what the listed steps'
    accepted + 1 tokens leave of the decode tokens)."""
    listed = spec.steps
    emitted = listed
    for accepted in spec.accepted:
        emitted += accepted
    return listed + max(0, tokens - emitted)


def tpot_interval(sums: Sums, confidence: float) -> Interval | None:
    """TPOT (seconds per output token) with its request-level interval on the log scale; None
    below two requests or without decode time."""
    if sums.requests < 2 or sums.x <= 0 or sums.y <= 0:
        return None
    ratio = sums.x / sums.y
    if not 0 < ratio < math.inf:
        return None
    variance = robust_variance(sums.requests, sums.x, sums.y, sums.xx, sums.xy, sums.yy)
    exponent = t_quantile(confidence, sums.requests - 1) * math.sqrt(variance) / ratio
    if not exponent < MAX_EXPONENT:  # not finite, or a spread no float holds
        return None
    spread = math.exp(exponent)
    return Interval(ratio, ratio / spread, ratio * spread)


@dataclass(slots=True)
class _Cell:
    window: WindowedRatio  # decode seconds over decode tokens
    since_start: DecodeSums  # with the load moments (a comparison at the same load)
    steps: Sums  # decode seconds over engine steps, since the start


@dataclass(frozen=True, slots=True)
class GoodputView:
    """One slice's (or rollup's, or load bucket's) goodput: TPOT over the window and since
    the start, the engine step time, and the requests each rests on."""

    tpot: Interval | None  # None below two requests: no variance
    requests: int
    tpot_since_start: Interval | None
    requests_since_start: int
    step_seconds: float | None
    seconds: float | None = None  # TPOT over the window, from one request on
    seconds_since_start: float | None = None


class GoodputTracker:
    """Per cell, the decode sums of speculative requests (baselines are the gain's,
    analysis/speed/speedup.py); where each request's time came from, per model."""

    def __init__(self, settings: Settings, buckets: CtxBuckets) -> None:
        self._buckets = buckets
        self._loads = LoadBuckets(settings.load.batch_edges)
        self._length = settings.window.length_seconds
        self._bucket = settings.window.bucket_seconds
        self._confidence = settings.zones.confidence
        self._cells: dict[Cell, _Cell] = {}
        self._cost = DraftCost(settings.zones.confidence)
        self.k0 = K0Cost()  # K = 0 steps against drafting ones (the k0_still_costs cause)
        self.sources: dict[str, dict[str, int]] = {}  # model -> tpot source -> requests

    def add(self, record: RequestRecord, model: str) -> None:
        if record.variant == C.VARIANT_BASELINE or record.spec is None:
            return
        decode = decode_of(record)
        if decode is None:
            return
        seconds, tokens = decode
        prompt, flight = record.prompt_tokens, record.in_flight
        ctx = C.UNKNOWN_CTX if prompt is None else self._buckets.label(prompt + 1)
        load = UNKNOWN_LOAD if flight is None else self._loads.label(flight)
        key = (model, ctx, record.task, load)
        cell = self._cells.get(key)
        if cell is None:
            cell = self._cells[key] = _Cell(
                WindowedRatio(self._length, self._bucket), DecodeSums(), Sums()
            )
        cell.window.add(record.ts, seconds, tokens)
        at = None if flight is None else float(flight)
        steps = float(decode_steps(record.spec, tokens))
        cell.since_start.add_request(seconds, tokens, at, steps)
        if record.spec.steps:
            cell.steps.add(seconds, record.spec.steps)
            if flight is not None:
                drafted, at = sum(record.spec.drafted), self._loads.index(flight)
                self._cost.add(model, at, record.spec.steps, drafted, seconds)
                self.k0.add(model, at, seconds, int(steps), record.spec.drafted)
        source = record.latency.tpot_source or C.TpotSource.VLLM
        by_source = self.sources.setdefault(model, {})
        by_source[source] = by_source.get(source, 0) + 1

    def cells(self, now: float) -> dict[Cell, tuple[Sums, DecodeSums]]:
        """Per cell its window's sums and its since-start sums, copied (a snapshot stays what
        it was): what the exposition's counters read."""
        return {
            key: (cell.window.total(now).copy(), cell.since_start.copy())
            for key, cell in self._cells.items()
        }

    def cost(self, model: str, known: Cost) -> Cost:
        """`known`, unless it is only the assumed default and the step times identify c:
        then theirs, with its interval (no A/B baseline, none configured)."""
        estimate = self._cost.estimate(model) if known.source == ASSUMED else None
        if estimate is None:
            return known
        return Cost(estimate.ratio, ESTIMATED, estimate.lower, estimate.upper)

    def since_start(self) -> dict[Cell, DecodeSums]:
        """Per cell its since-start sums, copied."""
        return {key: cell.since_start.copy() for key, cell in self._cells.items()}

    def views(self, now: float) -> dict[tuple[str, ...], GoodputView]:
        """Goodput keyed as the analysis keys its views: (model, ctx, task) per slice,
        (model, "all", "all") per model, and (model, "load", bucket) per load bucket."""
        groups: dict[tuple[str, ...], list[_Cell]] = {}
        for (model, ctx, task, load), cell in self._cells.items():
            keys: tuple[tuple[str, ...], ...] = (
                (model, ctx, task),
                (model, C.ALL, C.ALL),
                (model, "load", load),
            )
            for key in keys:
                groups.setdefault(key, []).append(cell)
        out: dict[tuple[str, ...], GoodputView] = {}
        for key, cells in groups.items():
            window, since, steps = Sums(), Sums(), Sums()
            for cell in cells:
                window.merge(cell.window.total(now))
                since.merge(cell.since_start)
                steps.merge(cell.steps)
            out[key] = GoodputView(
                tpot=tpot_interval(window, self._confidence),
                requests=window.requests,
                tpot_since_start=tpot_interval(since, self._confidence),
                requests_since_start=since.requests,
                step_seconds=steps.x / steps.y if steps.y > 0 else None,
                seconds=window.x / window.y if window.y > 0 else None,
                seconds_since_start=since.x / since.y if since.y > 0 else None,
            )
        return out
