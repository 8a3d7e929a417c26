"""Readings in steps (specwatch/turns.py, Analyzer.snapshot_in_turns, Exposition.render_in_turns):
the same figures as in one go, of one moment, with held changes made after in order."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Generator

import pytest
from specwatch.analysis.analyzer import Analyzer
from specwatch.core import pacing
from specwatch.core.records import SpecLogRecord
from specwatch.core.turns import ReadGate, finish, run
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition
from specwatch.export.reading import Reading

from tests.support.analysis import (
    MIXED_SETTINGS,
    analyzer,
    engine_sample,
    mixed_traffic,
    record,
    rendered,
)


def _fed(until: float, stepped: bool = False) -> Analyzer:
    """Mixed traffic up to `until`, evaluated every 10 s (`stepped`: each evaluation in steps
    as small as they come, a yield at every slice)."""
    a = analyzer(**MIXED_SETTINGS)
    next_evaluation = 10.0
    for item in mixed_traffic(2):
        if item.ts >= until:
            break
        while item.ts >= next_evaluation:
            if stepped:
                assert len(list(a.evaluate_in_turns(next_evaluation, step=0.0))) > 1
            else:
                a.evaluate(next_evaluation)
            next_evaluation += 10.0
        a.ingest(item)
    return a


@pytest.mark.parametrize("until", [300.0, 2000.0, 6000.0])
def test_a_snapshot_in_steps_is_the_snapshot_in_one_go(until: float) -> None:
    """Steps as small as they come (a yield at every slice): the same /metrics and /status."""
    stepped, whole = _fed(until), _fed(until)
    steps = stepped.snapshot_in_turns(until, step=0.0)
    taken = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            snapshot = done.value
            break
        taken += 1
    one_go = whole.snapshot(until)
    assert taken > len(one_go.slices)
    assert rendered(snapshot) == rendered(one_go)


@pytest.mark.parametrize("until", [300.0, 2000.0, 6000.0])
def test_evaluations_in_steps_are_evaluations_in_one_go(until: float) -> None:
    """Every evaluation of the history in steps: zones, drift, gains and what /metrics and
    /status show are those of evaluating in one go."""
    stepped, whole = _fed(until, stepped=True), _fed(until)
    assert rendered(stepped.snapshot(until)) == rendered(whole.snapshot(until))
    # a step per slice for its drift, one reading its window and one judging its zone
    slices = len(whole.snapshot(until).slices) + len(whole.snapshot(until).rollups)
    assert len(list(stepped.evaluate_in_turns(until, step=0.0))) >= 3 * slices


def test_the_text_in_steps_is_the_text_in_one_go() -> None:
    a = _fed(6000.0)
    reading = Reading(a.snapshot(6000.0))
    collector = SpecwatchCollector(lambda: reading)
    stepped, whole = Exposition(collector), Exposition(SpecwatchCollector(lambda: reading))
    families = collector.families(reading)
    steps = list(stepped.write_in_turns(families, step=0.0))
    assert len(steps) > len(families)
    stepped.PIECE_BYTES = 4096  # pieces of whole families, each at least this but the last
    pieces = finish(stepped.write_in_turns(families, step=0.0))
    assert b"".join(pieces) == whole.render(reading)
    assert len(pieces) > 3
    assert min(map(len, pieces[:-1])) >= 4096


_CHANGES: dict[str, Callable[[Analyzer], None]] = {
    "request": lambda a: a.ingest(record(5999.0, (1, 2))),
    "evaluation": lambda a: a.evaluate(6000.0),
    "vllm counters": lambda a: a.ingest_engine(engine_sample(6000.0, 10, 5, 1)),
    "vllm log": lambda a: a.ingest_log(SpecLogRecord(3, 4, None, ())),
}


@pytest.mark.parametrize("at", ["first", "last"])
@pytest.mark.parametrize("taken", ["reading", "evaluation"])
@pytest.mark.parametrize("change", sorted(_CHANGES))
def test_a_change_between_steps_is_refused(change: str, taken: str, at: str) -> None:
    """A reading is of one moment, and an evaluation judges one: the analysis changed under
    either, after its first step (inside the windows' read) or its last, raises; it does not
    mix two moments."""

    def start(a: Analyzer) -> Generator[None, None, object]:
        return (a.snapshot_in_turns if taken == "reading" else a.evaluate_in_turns)(
            6000.0, step=0.0
        )

    a = _fed(6000.0)
    steps = start(a)
    for _ in range(1 if at == "first" else len(list(start(_fed(6000.0))))):
        next(steps)
    _CHANGES[change](a)
    with pytest.raises(RuntimeError, match="the analysis changed while"):
        finish(steps)


def test_a_change_anywhere_in_an_evaluation_is_refused_when_the_rest_runs_in_one_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An evaluation taken in turns up to a point (drift, the windows' read or the judging),
    changed there, and finished in one turn (a fast machine): it still raises before its
    verdicts stand. The clock is core/pacing's, which compiled code reads too."""
    ticks = itertools.count()
    monkeypatch.setattr(pacing, "clock", lambda: next(ticks))  # a turn at every item
    turns = len(list(_fed(6000.0).evaluate_in_turns(6000.0, step=0.5)))
    assert turns > 20
    for at in sorted({1, 2, turns // 4, turns // 2, 3 * turns // 4, turns - 1, turns}):
        a = _fed(6000.0)
        monkeypatch.setattr(pacing, "clock", lambda: next(ticks))
        steps = a.evaluate_in_turns(6000.0, step=0.5)
        for _ in range(at):
            next(steps)
        _CHANGES["request"](a)
        monkeypatch.setattr(pacing, "clock", lambda: 0.0)  # the rest in one turn
        with pytest.raises(RuntimeError, match="the analysis changed while"):
            finish(steps)


def _counting(seen: list[str], n: int, name: str) -> Generator[None, None, str]:
    for i in range(n):
        seen.append(f"{name}{i}")
        yield
    return name


async def test_changes_made_during_a_reading_wait_for_its_end_in_order() -> None:
    failures: list[Exception] = []
    gate = ReadGate(failures.append)
    seen: list[str] = []

    def fail() -> None:
        raise ValueError("a bad change")

    async def meanwhile() -> None:
        await asyncio.sleep(0)  # the reading has started
        assert gate.reading
        for change in (lambda: seen.append("a"), fail, lambda: seen.append("b")):
            gate.change(change)
        assert "a" not in seen, "a change was made during the reading"

    reading, _ = await asyncio.gather(gate.read(lambda: _counting(seen, 4, "r")), meanwhile())
    assert reading == "r"
    assert seen == ["r0", "r1", "r2", "r3", "a", "b"]
    assert [str(error) for error in failures] == ["a bad change"]
    assert not gate.reading
    gate.change(lambda: seen.append("now"))
    assert seen[-1] == "now"


async def test_readings_take_turns_and_waiters_go_before_the_next_reading() -> None:
    gate = ReadGate(lambda error: None)
    seen: list[str] = []

    async def feeder() -> None:
        await asyncio.sleep(0)
        await gate.clear()
        seen.append("fed")

    await asyncio.gather(
        gate.read(lambda: _counting(seen, 3, "a")),
        feeder(),
        gate.read(lambda: _counting(seen, 3, "b")),
    )
    assert seen == ["a0", "a1", "a2", "fed", "b0", "b1", "b2"]


async def test_run_returns_to_the_loop_between_steps() -> None:
    seen: list[str] = []

    async def other() -> None:
        for i in range(3):
            seen.append(f"o{i}")
            await asyncio.sleep(0)

    result, _ = await asyncio.gather(run(_counting(seen, 3, "s")), other())
    assert result == "s"
    assert seen[:4] == ["s0", "o0", "s1", "o1"]


async def test_a_reading_that_fails_still_makes_the_held_changes_and_opens_the_gate() -> None:
    gate = ReadGate(lambda error: None)
    seen: list[str] = []

    def failing() -> Generator[None, None, str]:
        yield
        gate.change(lambda: seen.append("held"))
        yield
        raise ValueError("a bug in a reading")

    with pytest.raises(ValueError, match="a bug"):
        await gate.read(failing)
    assert seen == ["held"]
    assert not gate.reading
    await asyncio.wait_for(gate.clear(), 1)
