"""How what the proxy saw, what vLLM logs and what its /metrics say reach the analysis.

The proxy hands each observation to a bounded queue and returns: a full queue drops it,
counted, never delays a request. One consumer reads the queue into records and feeds the
analyzer, which counts a failure and goes on (a bug costs one observation, never the sidecar);
records are also written to the cycle log. The consumer reads in batches: woken by an
observation, it lets `BATCH_SECONDS` of them gather first, then reads them in a row, at most
`BATCH` before it gives the loop back. Read one by one, in between a stream's callbacks, each
costs about twice what it costs in a row (a task wake-up each, and code and data cold in the
caches; docs/benchmarks.md), and the analysis is evaluated every 10 s: a record read 0.1 s
late is judged at most one evaluation later. `drained` reads what is queued at once. Log
lines and scrapes change the analysis through the reading gate, so that no reading taken in
turns sees half a change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial

import structlog

from specwatch.analysis.analyzer import Analyzer
from specwatch.conventions import ParseSource
from specwatch.core.health import Health
from specwatch.core.records import EngineSample, RequestRecord, SpecConfig
from specwatch.core.turns import ReadGate
from specwatch.engines.vllm.log import LogParseFailure, parse_line
from specwatch.proxy.observation import Observation, to_record
from specwatch.settings import Settings
from specwatch.sidecar.capture import TextCapture
from specwatch.store.writer import CycleLogWriter

log = structlog.get_logger("specwatch")

BATCH_SECONDS = 0.1  # how long the first observation of a batch waits for others
BATCH = 256  # records read before the loop gets a turn: ~10 ms at most (50 us a record)


class Intake:
    """The analysis queue and its consumer, and the two other ways data comes in."""

    def __init__(
        self,
        settings: Settings,
        analyzer: Analyzer,
        health: Health,
        gate: ReadGate,
    ) -> None:
        self._settings = settings
        self._analyzer = analyzer
        self._health = health
        self._gate = gate
        self._queue: asyncio.Queue[Observation] = asyncio.Queue(settings.limits.analysis_queue)
        cycle_log = settings.cycle_log
        self._cycle_log = (
            CycleLogWriter(
                cycle_log.path,
                cycle_log.max_bytes,
                cycle_log.backups,
                max_age=cycle_log.max_age_seconds,
                compress=cycle_log.compress,
                track=settings.track,
            )
            if cycle_log.path is not None
            else None
        )
        # user data: only when asked for, and only into the cycle log
        self._capture = (
            TextCapture(cycle_log)
            if cycle_log.capture_text and self._cycle_log is not None
            else None
        )
        self._config: SpecConfig | None = None  # once known (consume)
        self._nap: asyncio.Future[None] | None = None  # the consumer gathering a batch

    def submit(self, observation: Observation) -> None:
        try:
            self._queue.put_nowait(observation)
        except asyncio.QueueFull:
            if observation.held is not None:
                observation.held.release()
            self._health.drop(observation.variant)

    def _record(self, observation: Observation) -> RequestRecord:
        """The observation read under the run's config: its id, whether it drafts trees, the
        model its command line serves (none before the config is known)."""
        config, tasks, health = self._config, self._settings.tasks, self._health
        if config is None:
            return to_record(observation, tasks, health)
        tree = config.tree_topk is not None
        return to_record(observation, tasks, health, config.id, tree, config.model)

    def ingest(self, observation: Observation) -> None:
        if observation.held is not None:
            observation.held.release()  # read now, and let go of after
        try:
            record = self._record(observation)
            self._analyzer.ingest(record)
        except Exception:  # a bug must cost one observation, never the sidecar
            self._health.internal_errors += 1
            log.exception("analysis_failed", request_id=observation.request_id)
            return
        if self._cycle_log is not None:
            try:
                if self._capture is not None:
                    record = self._capture(record, observation)
                self._cycle_log.write(record)
            except OSError as error:  # a full disk loses cycle-log lines, not requests
                self._health.cycle_log_errors += 1
                log.warning("cycle_log_failed", error=repr(error))

    async def consume(self, ready: Callable[[], Awaitable[SpecConfig]]) -> None:
        """Ingest what the proxy submits, once `ready` gives the config (every record is
        labelled with it, so it must be known first)."""
        config = await ready()
        self._config = config
        if self._cycle_log is not None:
            self._cycle_log.labelled(config)
        self._gate.change(partial(self._analyzer.set_config, config))
        queue = self._queue
        while True:
            first = await queue.get()
            await self._gather()
            batch = [first, *self._take(BATCH - 1)]
            while batch:
                await self._gate.clear()  # then nothing reads in turns until the batch is read
                for observation in batch:
                    self.ingest(observation)
                    queue.task_done()
                batch = self._take(BATCH)
                if batch:
                    await asyncio.sleep(0)  # relaying goes on between batches

    async def _gather(self) -> None:
        """Let a batch gather: BATCH_SECONDS, or until `drained` is waited for."""
        loop = asyncio.get_running_loop()
        self._nap = nap = loop.create_future()
        timer = loop.call_later(BATCH_SECONDS, _wake, nap)
        try:
            await nap
        finally:
            timer.cancel()
            self._nap = None

    def _take(self, most: int) -> list[Observation]:
        queue = self._queue
        return [queue.get_nowait() for _ in range(min(most, queue.qsize()))]

    async def drained(self) -> None:
        """Wait until every submitted observation has been ingested."""
        if self._nap is not None:
            _wake(self._nap)
        await self._queue.join()

    def log_line(self, line: str) -> None:
        """One line of vLLM's output (the child's stdout or a followed file)."""
        try:
            record = parse_line(line)
        except LogParseFailure as failure:
            self._health.parse_error(ParseSource.LOG, failure.reason)
            return
        if record is not None:
            self._gate.change(partial(self._analyzer.ingest_log, record))

    def engine_sample(self, sample: EngineSample) -> None:
        """vLLM's counters, scraped (what raises reaches the scraper, which counts it)."""
        self._gate.change(partial(self._analyzer.ingest_engine, sample))

    def close(self) -> None:
        if self._cycle_log is not None:
            self._cycle_log.close()


def _wake(nap: asyncio.Future[None]) -> None:
    if not nap.done():
        nap.set_result(None)
