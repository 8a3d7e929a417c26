"""[compiled] The counts every engine's per-request data is made of, read one way for all of them
(vLLM's blocks in engines/vllm/response.py, the others' in engines/): a count is a
non-negative int that is not a bool; a histogram of steps by accepted tokens is a dense list,
or a map whose string keys spell the index ("3"), as JSON objects carry them. What is not
raises Unreadable."""

from __future__ import annotations

from typing import Any

from specwatch.engines import Unreadable

_ONLY_INT = frozenset({int})


def count(value: Any) -> int | None:
    """A non-negative int that is not a bool, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def key(value: Any) -> int | None:
    """A string key that spells a count ("3"); "²" is a digit to str.isdigit, not to int."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 6:
        return int(value)
    return None


def counts(value: Any, field: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise Unreadable(f"{field} is not a list")
    # C-level checks, one pass each: exactly ints (a bool's type is bool), none negative
    if value and (not _ONLY_INT.issuperset(map(type, value)) or min(value) < 0):
        raise Unreadable(f"{field} holds a non-count")
    return tuple(value)


def histogram(value: Any, field: str, k: int | None = None) -> tuple[int, ...]:
    """Steps by accepted count as a dense tuple; a map is made dense up to its largest key, or
    to `k` (the draft length, where known) when that is larger."""
    if not isinstance(value, dict):
        return counts(value, field)
    dense: dict[int, int] = {}
    for name, n in value.items():
        j, steps = key(name), count(n)
        if j is None or steps is None:
            raise Unreadable(f"{field} holds a non-count")
        dense[j] = steps
    size = max(dense, default=-1) + 1
    if k is not None:
        size = max(k + 1, size)
    return tuple(dense.get(j, 0) for j in range(size))
