"""[compiled] Sorted bounds searched by a plain loop: `bisect`'s answers, in C when compiled.

Context buckets and load buckets each have a handful of bounds, searched once per request or
per step: a compiled loop over them costs a tenth of a call of the `bisect` builtin (docs/
architecture.md, "Writing for the compiled build"). tests/unit/core/test_search.py holds both
to `bisect` on any sorted bounds.
"""

from __future__ import annotations


def first_above(bounds: tuple[int, ...], value: int) -> int:
    """`bisect.bisect_right(bounds, value)`: the index of the first bound above `value`."""
    for i in range(len(bounds)):
        if bounds[i] > value:
            return i
    return len(bounds)


def first_at_least(bounds: tuple[int, ...], value: int) -> int:
    """`bisect.bisect_left(bounds, value)`: the index of the first bound at or above `value`."""
    for i in range(len(bounds)):
        if bounds[i] >= value:
            return i
    return len(bounds)
