"""What an evaluation judges a slice on (analysis/verdicts/judging.py): the evidence it keeps
between evaluations and the metric it reads, rule by rule."""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import alpha_interval, rate_interval, tau_interval
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.analysis.verdicts.judging import Judging
from specwatch.core.records import SliceKey
from specwatch.settings import load_settings

K = 4
KEY = SliceKey("m", "0-1k", "chat")


def judging() -> tuple[Judging, SlidingWindow[SliceKey]]:
    settings = load_settings()
    window: SlidingWindow[SliceKey] = SlidingWindow(
        settings.window.length_seconds, settings.window.bucket_seconds, K
    )
    return Judging(settings, window), window


def fed(requests: int, now: float) -> tuple[Judging, Counts]:
    """`requests` requests of 10 steps of K, 2 accepted each, at `now`, in both the verdict
    window and the evidence windows (as the analyzer feeds them)."""
    judge, window = judging()
    total = Counts(K)
    for _ in range(requests):
        counts = Counts.of_request([K] * 10, [2] * 10, K)
        window.add(KEY, now, counts)
        judge.windows.add(KEY, now, counts)
        total.merge(counts)
    return judge, total


def test_evidence_kept_for_entering_a_verdict_is_not_reused_to_keep_one() -> None:
    """20 requests are past half the sample gates, not the whole: no evidence to enter a
    verdict on, enough to keep one. Nothing changed between the two reads; what the slice is
    doing (entering or keeping) did, and the evidence is read again."""
    judge, counts = fed(20, now=100.0)
    assert judge.evidence(KEY, counts, C.SliceSource.PROXY, 100.0, entry=True) is None
    kept = judge.evidence(KEY, counts, C.SliceSource.PROXY, 100.0, entry=False)
    assert kept is not None
    assert not any(window.full for window in kept.windows)
    assert judge.evidence(KEY, counts, C.SliceSource.PROXY, 100.0, entry=True) is None
    assert judge.latest(KEY) is None


def test_the_rate_stands_in_only_where_the_proxy_saw_drafts_without_trials() -> None:
    judge, _ = judging()
    configured = load_settings().zones.metric
    assert "rate" != configured
    totals_only = Counts(K)
    totals_only.drafted = 400  # an engine that sends totals: drafts, no step's trials
    assert "rate" == judge.metric(totals_only, C.SliceSource.PROXY)
    assert configured == judge.metric(totals_only, C.SliceSource.VLLM_METRICS)
    # a window that drafted nothing has no trials either: nothing to judge it on differently
    assert configured == judge.metric(Counts(K), C.SliceSource.PROXY)
    assert configured == judge.metric(Counts.of_request([K], [1], K), C.SliceSource.PROXY)


def test_the_intervals_are_the_metrics_and_taus_read_again_only_after_a_change() -> None:
    """alpha-hat's and tau's intervals of the window's counts; the rate's where the proxy saw
    drafts without trials; the same objects while the window holds still, new ones after a
    request (vLLM's own counters: computed each time, never kept)."""
    judge, counts = fed(30, now=100.0)
    interval, tau = judge.intervals(KEY, counts, C.SliceSource.PROXY)
    assert interval == alpha_interval(counts, 0.95)
    assert tau == tau_interval(counts, 0.95)
    again, _ = judge.intervals(KEY, counts, C.SliceSource.PROXY)
    assert again is interval
    more = Counts.of_request([K] * 10, [4] * 10, K)
    judge._window.add(KEY, 101.0, more)
    counts.merge(more)
    moved, _ = judge.intervals(KEY, counts, C.SliceSource.PROXY)
    assert moved == alpha_interval(counts, 0.95)
    assert moved != interval
    totals_only = Counts(K)
    totals_only.requests, totals_only.drafted, totals_only.accepted = 5, 400, 300
    rate, _ = judge.intervals(SliceKey("m", "0-1k", "code"), totals_only, C.SliceSource.PROXY)
    assert rate == rate_interval(totals_only, 0.95)
    engine = SliceKey("m", C.ALL, C.ALL)
    first, _ = judge.intervals(engine, counts, C.SliceSource.VLLM_METRICS)
    assert first == alpha_interval(counts, 0.95)
    assert first is not judge.intervals(engine, counts, C.SliceSource.VLLM_METRICS)[0]


def test_the_evidence_reads_the_verdict_window_and_the_longer_ones_kept_until_a_change() -> None:
    """The verdict window's evidence first, then each evidence window's; read again only when
    a window moved; vLLM's own counters: the verdict window alone, read each time."""
    judge, counts = fed(40, now=100.0)
    found = judge.evidence(KEY, counts, C.SliceSource.PROXY, 100.0, entry=True)
    assert found is not None
    lengths = [window.seconds for window in found.windows]
    settings = load_settings()
    assert lengths == sorted({settings.window.length_seconds, *settings.evidence_windows_seconds})
    assert judge.evidence(KEY, counts, C.SliceSource.PROXY, 100.0, entry=True) is found
    assert judge.latest(KEY) is found
    engine = judge.evidence(KEY, counts, C.SliceSource.VLLM_METRICS, 100.0, entry=True)
    assert engine is not None
    assert [settings.window.length_seconds] == [w.seconds for w in engine.windows]
    assert engine is not judge.evidence(KEY, counts, C.SliceSource.VLLM_METRICS, 100.0, True)
