"""What the admin endpoints and the evaluation timer take of the analysis: in turns through
the reading gate, the event loop relaying between them, nothing changing it meanwhile."""

from __future__ import annotations

from collections.abc import Callable, Generator

from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.compare.changes import sums_of
from specwatch.conventions import SliceSource
from specwatch.core.health import Health
from specwatch.core.turns import ReadGate, finish
from specwatch.export.reading import Reading
from specwatch.proxy.ab import ABRouter
from specwatch.proxy.budget import ByteBudget
from specwatch.sidecar.states import States
from specwatch.upstream.configwatch import ConfigWatch


class Readings:
    """Readings of the analysis with the health, A/B, config and change beside it."""

    def __init__(
        self,
        analyzer: Analyzer,
        health: Health,
        router: ABRouter,
        budget: ByteBudget,
        states: States,
        config: ConfigWatch,
        gate: ReadGate,
        clock: Callable[[], float],
    ) -> None:
        self._analyzer = analyzer
        self._health = health
        self._router = router
        self._budget = budget
        self._states = states
        self._config = config
        self._gate = gate
        self._clock = clock

    def read(self) -> Reading:
        """What export shows now, in one go: copies, never live state."""
        return finish(self._reading_turns())

    async def reading(self) -> Reading:
        """`read`, the analysis taken in turns with the loop relaying in between (what the
        admin endpoints do: at full cardinality it takes tens of milliseconds)."""
        return await self._gate.read(self._reading_turns)

    async def evaluate_now(self) -> float:
        """One zone and drift evaluation now (the timer's, and the demo's out of turn), in
        turns through the gate like a reading; its time."""
        return await self._gate.read(self._evaluation_turns)

    def _evaluation_turns(self) -> Generator[None, None, float]:
        now = self._clock()  # when its turn comes, not when it was asked for
        yield from self._analyzer.evaluate_in_turns(now)
        return now

    def _reading_turns(self) -> Generator[None, None, Reading]:
        budget = self._budget
        health = self._health.snapshot(budget.held, budget.limit)
        ab = self._router.snapshot()
        snapshot = yield from self._analyzer.snapshot_in_turns(self._clock())
        history, change = self._states.history, None
        if history is not None and history.changed is not None:
            views = (*snapshot.slices, *snapshot.rollups)
            live = {v.key: sums_of(v.since_start) for v in views if v.source == SliceSource.PROXY}
            timed = {key: since for key, (_, since) in snapshot.goodput_cells.items()}
            change = history.view(live, timed)
        changes = 0 if history is None else history.changes
        return Reading(snapshot, health, ab, self._config.config, change, changes)
