"""The engines' Prometheus pages as they are released: TensorRT-LLM's at /prometheus/metrics
(its MetricsCollector's names and labels, per `token_position`), its /metrics never read (JSON
iteration stats, drained when read); SGLang's count of verified steps; counters an engine makes
at its first count read from zero."""

from __future__ import annotations

from typing import Any

import aiohttp
import structlog
from prometheus_client import CollectorRegistry, Counter, generate_latest
from specwatch.analysis.counting.engine import EngineCounters
from specwatch.conventions import SGLANG_VERIFY_CALLS
from specwatch.core.health import Health
from specwatch.core.records import EngineSample
from specwatch.sim.acceptance import CostModel, Step
from specwatch.sim.metrics import TrtllmCounters
from specwatch.sim.server import SimConfig, SimServer
from specwatch.upstream.scraper import TRTLLM_ABSENT, Scraper, parse_vllm_metrics

from tests.support.http import post, serve


def trtllm_page(steps: list[tuple[int, int]]) -> str:
    """A page as TensorRT-LLM's collector writes it (prometheus_client, its names and labels)
    after steps of (drafted, accepted)."""
    counters = TrtllmCounters("qwen")
    for drafted, accepted in steps:
        counters.step(Step(drafted=drafted, accepted=accepted, emitted=accepted + 1))
    return generate_latest(counters.registry).decode()


def test_trtllms_per_position_counters_give_steps_tokens_and_positions() -> None:
    # the last two steps cut short by max_tokens: every step drafted position 0, not all 1
    steps = [(3, 3), (3, 1), (3, 0), (3, 2), (2, 2), (1, 0)]
    (sample,) = parse_vllm_metrics(trtllm_page(steps), ts=1.0)
    assert sample.model == "qwen"  # its `model_name` label, no /v1/models needed
    assert (sample.drafts, sample.draft_tokens, sample.accepted_tokens) == (6, 15, 8)
    assert sample.accepted_per_position == (4.0, 3.0, 1.0)


def test_alpha_hat_at_one_k_follows_from_trtllms_positions() -> None:
    """At one K the steps that accepted all K are those counted at the last position: trials
    are accepted + the steps that met a rejection."""
    steps = [(3, 3), (3, 1), (3, 0), (3, 2)]
    engine = EngineCounters(600.0, 10.0, 8, fresh_start=True)
    engine.observe(parse_vllm_metrics(trtllm_page(steps), ts=1.0)[0])
    total = engine.total("qwen")
    assert (total.steps, total.accepted, total.trials) == (4, 6, 6 + 3)


def test_sglangs_verified_steps_are_the_steps_counted() -> None:
    registry = CollectorRegistry()
    verify = Counter(SGLANG_VERIFY_CALLS + "_total", "Verify calls.",
                     ["model_name", "engine_type"], registry=registry)  # fmt: skip
    verify.labels(model_name="qwen", engine_type="unified").inc(37)
    (sample,) = parse_vllm_metrics(generate_latest(registry).decode(), ts=1.0)
    assert (sample.model, sample.drafts, sample.draft_tokens) == ("qwen", 37.0, 0.0)


async def scraped(config: SimConfig, requests: int) -> tuple[list[EngineSample], SimServer]:
    server = SimServer(config)
    runner, url = await serve(server.app())
    seen: list[EngineSample] = []
    scraper = Scraper(url, 0.1, Health(), seen.append)
    body: dict[str, Any] = {"model": config.model, "prompt": "hi", "max_tokens": 12}
    try:
        async with aiohttp.ClientSession() as session:
            await scraper.scrape_once(session)  # before any traffic: no counter yet
            for _ in range(requests):
                await post(session, url + "/v1/completions", body)
            await scraper.scrape_once(session)
            await scraper.scrape_once(session)
    finally:
        await runner.cleanup()
    return seen, server


async def test_trtllm_is_scraped_where_it_mounts_prometheus_and_counted_from_zero() -> None:
    config = SimConfig(engine="trtllm", sleep=False, cost=CostModel(target_step_ms=0.1))
    seen, server = await scraped(config, 3)
    assert server.metrics_json_reads == 0
    first = seen[0]
    assert first.since_zero  # absent from the page before traffic: all it counts is new
    engine = EngineCounters(600.0, 10.0, 8, fresh_start=False)
    for sample in seen:
        engine.observe(sample)
    assert engine.total(config.model).drafted == server.metrics.totals()["draft_tokens"] > 0


async def test_trtllm_without_its_prometheus_page_is_said_once_and_its_json_left_alone() -> None:
    config = SimConfig(engine="trtllm", sleep=False, trtllm_prometheus=False)
    with structlog.testing.capture_logs() as logs:
        seen, server = await scraped(config, 1)
    assert seen == []
    assert server.metrics_json_reads == 0
    said = [entry for entry in logs if entry["event"] == "trtllm_prometheus_absent"]
    assert [entry["reason"] for entry in said] == [TRTLLM_ABSENT]
    assert "return_perf_metrics" in TRTLLM_ABSENT
