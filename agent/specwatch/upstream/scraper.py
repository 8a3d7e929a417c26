"""Poll vLLM's /health and /metrics: liveness, and its engine-wide speculative counters.

Of /metrics (600-odd lines from vLLM 0.32, histograms mostly) only the sample lines of the
few families read here are kept, then parsed with prometheus_client's parser: parsing the
whole page in Python cost 5% of the sidecar's CPU on real traffic. `_created` samples and
other families are never parsed; engines of one served model are summed. Counter resets are
the analysis' business (analysis/counting/engine.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections import defaultdict
from collections.abc import Callable

import aiohttp
import structlog
from prometheus_client.parser import text_string_to_metric_families

from specwatch import conventions as C
from specwatch.conventions import ParseReason, ParseSource
from specwatch.core.health import Health
from specwatch.core.records import EngineSample
from specwatch.engines.detect import TRTLLM, owner_engine
from specwatch.upstream.models import first_model, listed_models

log = structlog.get_logger("specwatch.scraper")

_COUNTERS = {
    C.VLLM_NUM_DRAFTS + "_total": "drafts",
    C.VLLM_NUM_DRAFT_TOKENS + "_total": "draft_tokens",
    C.VLLM_NUM_ACCEPTED_TOKENS + "_total": "accepted_tokens",
    C.VLLM_REQUEST_SUCCESS + "_total": "requests",
    C.LLAMACPP_NUM_DRAFTS + "_total": "drafts",
    C.LLAMACPP_NUM_DRAFT_TOKENS + "_total": "draft_tokens",
    C.LLAMACPP_NUM_ACCEPTED_TOKENS + "_total": "accepted_tokens",
    C.TRTLLM_NUM_DRAFT_TOKENS + "_total": "draft_tokens",
    C.TRTLLM_NUM_ACCEPTED_TOKENS + "_total": "accepted_tokens",
    C.SGLANG_VERIFY_CALLS + "_total": "drafts",  # its verified steps: no token counters
}
_PER_POSITION = frozenset(
    {C.VLLM_NUM_ACCEPTED_PER_POS + "_total", C.LLAMACPP_NUM_ACCEPTED_PER_POS + "_total"}
)
# TensorRT-LLM's per-position pair, by `token_position`: what every total is read from
_TRTLLM_POSITIONS = {
    C.TRTLLM_DRAFTED_PER_POS + "_total": 0,
    C.TRTLLM_ACCEPTED_PER_POS + "_total": 1,
}
_RUNNING = frozenset({C.VLLM_REQUESTS_RUNNING, C.LLAMACPP_REQUESTS_RUNNING})
_READ = frozenset((*_COUNTERS, *_PER_POSITION, *_TRTLLM_POSITIONS, *_RUNNING))
# a sample line of a family read here starts with its name and then labels or the value
_OURS = tuple(sorted(f"{name}{after}" for name in _READ for after in ("{", " ")))


def _our_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.startswith(_OURS))


class ScrapeFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_vllm_metrics(text: str, ts: float, unlabelled: str = "") -> list[EngineSample]:
    """One sample per served model that has speculative counters, by `model_name` (vLLM's,
    SGLang's, TensorRT-LLM's) or, for llama.cpp's one model, which has no label, `unlabelled`.
    SGLang counts its verified steps only (no tokens: its gauges reset every log interval).
    Where TensorRT-LLM counts per position, every total is read from those: the steps that
    drafted (position 0), the tokens drafted and accepted (their sums), per position."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    positions: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    trtllm: dict[str, tuple[dict[int, float], dict[int, float]]] = defaultdict(
        lambda: (defaultdict(float), defaultdict(float))
    )
    running: dict[str, float] = defaultdict(float)
    try:
        for family in text_string_to_metric_families(_our_lines(text)):
            for sample in family.samples:
                if sample.name not in _READ:
                    continue
                if not 0.0 <= sample.value < math.inf:  # NaN too: a count is finite, >= 0
                    raise ValueError(f"{sample.name} is {sample.value}")
                model = sample.labels.get("model_name", unlabelled)
                if sample.name in _COUNTERS:
                    sums[model][_COUNTERS[sample.name]] += sample.value
                elif sample.name in _PER_POSITION:
                    positions[model][int(sample.labels["position"])] += sample.value
                elif sample.name in _TRTLLM_POSITIONS:
                    pair = trtllm[model][_TRTLLM_POSITIONS[sample.name]]
                    pair[int(sample.labels["token_position"])] += sample.value
                elif sample.name in _RUNNING:
                    running[model] += sample.value
    except (ValueError, KeyError, TypeError) as error:
        raise ScrapeFailure(ParseReason.BAD_FORMAT) from error
    for model, (drafted, accepted) in trtllm.items():
        sums[model].update(
            drafts=drafted.get(0, 0.0),
            draft_tokens=sum(drafted.values()),
            accepted_tokens=sum(accepted.values()),
        )
        # every position drafted, one never accepted at 0
        drafted_at = range(max(drafted, default=-1) + 1)
        positions[model] = defaultdict(float, {at: accepted.get(at, 0.0) for at in drafted_at})
    out = []
    for model, values in sorted(sums.items()):
        if "drafts" not in values and "draft_tokens" not in values:
            continue  # a model served without speculation (TensorRT-LLM counts no drafts)
        per_position = positions.get(model, {})
        out.append(
            EngineSample(
                ts=ts,
                model=model,
                drafts=values.get("drafts", 0.0),
                draft_tokens=values.get("draft_tokens", 0.0),
                accepted_tokens=values.get("accepted_tokens", 0.0),
                accepted_per_position=tuple(per_position[i] for i in sorted(per_position)),
                requests=values.get("requests", 0.0),
                running=running.get(model),
            )
        )
    return out


# what trtllm-serve needs for a Prometheus page, said once when it has none
TRTLLM_ABSENT = (
    f"trtllm-serve mounts Prometheus at {C.TRTLLM_METRICS_PATH} only with "
    "`return_perf_metrics: true` (per-position counters) and `enable_iter_perf_stats: true` "
    "(token counters) in its --extra_llm_api_options YAML; its /metrics is JSON, drained when "
    "read, and is never polled"
)


class Scraper:
    """Every `interval` seconds: GET /health (-> upstream_up), then the engine's Prometheus page
    (-> samples): /metrics, TensorRT-LLM's /prometheus/metrics (its /metrics must never be
    read). `engine` says which engine the upstream is, None until the sidecar knows; until
    then the scraper asks /v1/models' `owned_by` itself, so that the first sample, the
    baseline of a sidecar started beside a running engine, comes before its traffic."""

    def __init__(
        self,
        upstream: str,
        interval: float,
        health: Health,
        sink: Callable[[EngineSample], None],
        clock: Callable[[], float] = time.time,
        engine: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._upstream = upstream
        self._interval = interval
        self._health = health
        self._sink = sink
        self._clock = clock
        self._engine = engine
        self._absent_said = False
        self._owner: str | None = None  # the engine /v1/models names, asked until it says
        self._read_a_page = False
        self._counted: set[str] = set()  # models with counters on a page read
        # llama.cpp's counters carry no model label: the model its /v1/models serves
        self._unlabelled: str | None = None

    async def _served_model(self, session: aiohttp.ClientSession) -> str | None:
        """The one model an unlabelled /metrics counts (llama.cpp's), or None (asked again at
        the next scrape)."""
        return first_model(await listed_models(session, self._upstream))

    async def scrape_once(self, session: aiohttp.ClientSession) -> None:
        try:
            async with session.get(self._upstream + "/health") as response:
                up = response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            up = False
        if up != self._health.upstream_up:
            log.info("upstream_health", up=up, url=self._upstream)
        self._health.upstream_up = up
        if not up:
            return
        if self._engine() is None and self._owner is None:
            self._owner = owner_engine(await listed_models(session, self._upstream))
        trtllm = (self._engine() or self._owner) == TRTLLM
        try:
            path = C.TRTLLM_METRICS_PATH if trtllm else "/metrics"
            async with session.get(self._upstream + path) as response:
                if trtllm and response.status == 404:
                    if not self._absent_said:
                        log.warning("trtllm_prometheus_absent", reason=TRTLLM_ABSENT)
                        self._absent_said = True
                    return
                if response.status != 200:
                    raise ScrapeFailure(ParseReason.BAD_STATUS)
                text = await response.text(errors="replace")
            if self._unlabelled is None and C.LLAMACPP_NUM_DRAFTS in text:
                self._unlabelled = await self._served_model(session)
            samples = parse_vllm_metrics(text, self._clock(), self._unlabelled or "")
        except ScrapeFailure as failure:
            self._health.parse_error(ParseSource.METRICS, failure.reason)
            return
        except (aiohttp.ClientError, TimeoutError):
            self._health.parse_error(ParseSource.METRICS, ParseReason.UNREACHABLE)
            return
        first, self._read_a_page = not self._read_a_page, True
        for sample in samples:
            if not first and sample.model not in self._counted:
                sample = dataclasses.replace(sample, since_zero=True)
            self._counted.add(sample.model)
            try:
                self._sink(sample)
            except Exception:  # a bug costs this sample, not the rest of the page
                self._health.internal_errors += 1
                log.exception("analysis_failed", source=ParseSource.METRICS, model=sample.model)

    async def run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=max(1.0, self._interval))
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                await self.scrape_once(session)
                await asyncio.sleep(self._interval)
