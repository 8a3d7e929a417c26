"""[compiled] What the analysis shows at one moment: per slice, per model and of vLLM's own
counters, copied, so readers (export, replay, the demo) never touch live state. The copies are
read-only: successive snapshots share those of a slice or histogram that did not change in
between."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from specwatch import conventions as C
from specwatch.analysis.causes.drafting import SamplingView
from specwatch.analysis.causes.rules import Cause, CauseTracker
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.engine import EngineView, LogTotals
from specwatch.analysis.counting.objectives import LatencyView
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.drift.detector import DriftView
from specwatch.analysis.drift.mix import MixView
from specwatch.analysis.speed.advisor import Advice
from specwatch.analysis.speed.goodput import Cell, GoodputView
from specwatch.analysis.speed.load import KTable, LoadCell
from specwatch.analysis.speed.speedup import Gain
from specwatch.analysis.verdicts.evidence import Evidence
from specwatch.core.histogram import Histogram
from specwatch.core.records import RequestKey, SliceKey


@dataclass(frozen=True, slots=True)
class SliceView:
    """One slice at one moment: counts since start, counts and statistics over the window."""

    key: SliceKey
    since_start: Counts
    window: Counts
    stats: SliceStats
    zone: str
    zone_since: float | None
    source: str = C.SliceSource.PROXY
    gain: Gain | None = None
    drift: DriftView | None = None
    advice: Advice | None = None
    evidence: Evidence | None = None  # what the zone was judged on at the latest evaluation
    causes: tuple[
        Cause, ...
    ] = ()  # why acceptance is poor or suspicious (analysis/causes/rules.py)
    zone_metric: str = (
        "alpha"  # what the zone judged: alpha, or the rate (analysis/verdicts/judging.py)
    )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything export needs, copied: readers never touch live state."""

    at: float
    started: float
    window_seconds: float
    slices: tuple[SliceView, ...]  # the partition: sums over these are all traffic
    rollups: tuple[SliceView, ...]  # per model, ctx_bucket = task = "all"
    requests: dict[tuple[RequestKey, str], int]  # (request slice + variant, outcome) -> count
    tokens: dict[RequestKey, tuple[int, int]]  # -> (prompt, completion) tokens
    histograms: dict[str, dict[RequestKey, Histogram]]
    folded_models: int
    engine: tuple[EngineView, ...] = ()
    vllm_log: LogTotals | None = None
    counter_resets: int = 0
    mix: dict[str, MixView] | None = None  # per model
    load: tuple[KTable, ...] = ()  # per model: the K table by batch size, since the start
    load_window: tuple[KTable, ...] = ()  # the same over `load.window_seconds`: gains, alerts
    load_cells: tuple[LoadCell, ...] = ()  # since the start: the per-bucket counters
    extremes: dict[str, dict[str, int]] | None = None  # model -> extreme kind -> requests
    # model -> requests served with vLLM's per-request speculative block, and without it
    per_request_data: dict[str, tuple[int, int]] | None = None
    # model -> sampling mode (greedy, sampled, default) -> accepted over trials since the start
    sampling: dict[str, dict[str, SamplingView]] = field(default_factory=dict)
    # decode time per output token: per slice, model rollup and (model, "load", bucket); per
    # cell the window's and since-start sums (the counters); per model the TPOT sources
    goodput: dict[tuple[str, ...], GoodputView] = field(default_factory=dict)
    goodput_cells: dict[Cell, tuple[Sums, DecodeSums]] = field(default_factory=dict)
    tpot_sources: dict[str, dict[str, int]] = field(default_factory=dict)
    latency: LatencyView = field(default_factory=LatencyView)  # the latency objectives'


def with_causes(
    view: SliceView, causes: CauseTracker, gates: tuple[int, int], now: float
) -> SliceView:
    """`view` with its causes at `now` (the same view when they did not change). A model judged
    on vLLM's own counters (vLLM counts its speculative steps) may lack per-request data."""
    found = causes.causes(view.key, view.window, view.stats, gates, now)
    if view.source == C.SliceSource.VLLM_METRICS:
        missing = causes.no_data(view.key.model)
        if missing is not None:
            found = (*found, missing)
    return view if found == view.causes else replace(view, causes=found)
