"""Python's cycle collector, set one way for each kind of work: a service whose event loop
every proxied stream waits on (`settle_heap`), and a pile of long-lived objects made at once,
none in a cycle (`paused`, `kept_to_the_end`): cycle logs read, a replay's records sorted and
analysed. The policy is stated here once; the figures behind it are in docs/benchmarks.md."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# a full cycle collection after this many middle ones (Python's default: 10)
FULL_COLLECTION_AFTER = 100


def settle_heap() -> None:
    """The cycle collector, for a process whose event loop every proxied stream waits on.

    What the process made so far (modules, classes, functions, settings) lives as long as it
    does: frozen out of the collector's sight, a full collection walks only what came after.
    And a full collection comes after 100 middle ones instead of 10: at full cardinality each
    scrape keeps its objects until the next, so Python's rule (a full one when the survivors
    since the last reach a quarter of the old generation) did not hold full collections back,
    and each stopped the loop. Young and middle collections are as before; cyclic garbage that
    grew old waits ten times longer (specwatch makes next to none), and RSS stays flat
    (benchmarks/soak.py, benchmarks/metrics_scrape.py; the figures: docs/benchmarks.md,
    section "Figures behind design choices")."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_AFTER)


@contextmanager
def paused(freeze: bool = False) -> Iterator[bool]:
    """The collector off while long-lived objects pile up (it would walk the growing pile
    again and again, for nothing to collect: about 5% of a replay); on leaving, it is back on
    as it was, and with `freeze` what was made is frozen out of its view. Yields whether it
    will freeze: then the caller gives back with `thaw` when it is done. Nothing is frozen
    where something already is (a caller's own freeze, which `thaw` would undo) or where the
    collector was off."""
    collecting = gc.isenabled()
    freezing = freeze and collecting and gc.get_freeze_count() == 0
    gc.disable()
    try:
        yield freezing
    finally:
        if freezing:
            gc.freeze()
        if collecting:
            gc.enable()


def thaw() -> None:
    """What `paused(freeze=True)` froze given back to the collector (a caller that lives on
    collects it as usual)."""
    gc.unfreeze()


def kept_to_the_end() -> None:
    """Everything made so far lives to the process' end and holds no garbage: frozen, the
    collector's pass at exit does not walk it again (about 3% of a replay's CPU)."""
    gc.freeze()
