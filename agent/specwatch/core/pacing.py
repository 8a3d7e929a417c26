"""[compiled] How long a turn of work runs before it yields (core/turns.py says why turns).

`clock` is a plain module global, not `Final`: compiled code reads it from the module at each
call, so a test that sets its own clock here sets it for both builds (docs/architecture.md,
"Writing for the compiled build").
"""

from __future__ import annotations

import time

clock = time.perf_counter


class Pace:
    """Work in turns of about `step` seconds: at each item `due()` says whether this turn has
    run its time; the caller yields, and calls `restart()` when it is resumed."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.started = clock()

    def due(self) -> bool:
        return clock() - self.started >= self.step

    def restart(self) -> None:
        self.started = clock()
