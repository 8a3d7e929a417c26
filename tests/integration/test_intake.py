"""The analysis queue's consumer: it reads observations in batches, in a row, and gives the
event loop back between batches (sidecar/intake.py)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from specwatch.analysis.analyzer import Analyzer
from specwatch.core.health import Health
from specwatch.core.records import SpecConfig
from specwatch.core.turns import ReadGate
from specwatch.proxy.observation import Observation
from specwatch.proxy.tasks import features_of
from specwatch.settings import Settings
from specwatch.sidecar import intake as intake_module
from specwatch.sidecar.intake import Intake

CONFIG = SpecConfig("c1", "ngram", None, 4, (), "standard", "0.32.0", "stable")


def observation(i: int) -> Observation:
    return Observation(
        ts=1.0 + i,
        request_id=str(i),
        features=features_of("/v1/completions", None, None),
        outcome=None,
        stream=False,
        payload=orjson.dumps({"id": str(i), "model": "m"}),
        e2e=0.1,
        first_byte=0.01,
    )


class Turns:
    """Counts the event loop's turns, and which turn each observation was read in."""

    def __init__(self) -> None:
        self.turn = 0
        self.read: list[int] = []  # the turn of each observation read, in order

    async def count(self) -> None:
        while True:
            self.turn += 1
            await asyncio.sleep(0)

    def batches(self) -> list[int]:
        """How many observations were read in each turn that read any, in order."""
        return list(collections.Counter(self.read).values())  # in first-seen order


class CountedIntake(Intake):
    def __init__(self, turns: Turns, *args: Any) -> None:
        super().__init__(*args)
        self.turns = turns

    def ingest(self, observation: Observation) -> None:
        self.turns.read.append(self.turns.turn)
        super().ingest(observation)


@contextlib.asynccontextmanager
async def consuming(settings: Settings) -> AsyncIterator[tuple[Intake, Turns]]:
    health = Health()
    analyzer = Analyzer(settings, 0.0)
    turns = Turns()
    intake = CountedIntake(turns, settings, analyzer, health, ReadGate(lambda error: None))

    async def ready() -> SpecConfig:
        return CONFIG

    tasks = [asyncio.create_task(intake.consume(ready)), asyncio.create_task(turns.count())]
    try:
        yield intake, turns
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert 0 == health.internal_errors


async def test_a_queue_is_read_in_batches_of_at_most_batch_with_the_loop_between() -> None:
    async with consuming(Settings()) as (intake, turns):
        queued = 2 * intake_module.BATCH + 10
        for i in range(queued):
            intake.submit(observation(i))
        await intake.drained()
    batches = turns.batches()
    assert [intake_module.BATCH, intake_module.BATCH, 10] == batches
    assert queued == len(turns.read)


async def test_observations_that_come_while_a_batch_gathers_are_read_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(intake_module, "BATCH_SECONDS", 3600.0)
    async with consuming(Settings()) as (intake, turns):
        intake.submit(observation(0))
        for _ in range(100):  # the consumer wakes and waits for the batch to gather
            if intake._nap is not None:
                break
            await asyncio.sleep(0)
        assert intake._nap is not None
        for i in range(1, 6):
            intake.submit(observation(i))
        for _ in range(20):  # the loop turns; nothing is read while the batch gathers
            await asyncio.sleep(0)
        assert [] == turns.read
        # drained() reads at once what is queued: no waiting out BATCH_SECONDS
        await asyncio.wait_for(intake.drained(), timeout=60)
    assert [6] == turns.batches()
