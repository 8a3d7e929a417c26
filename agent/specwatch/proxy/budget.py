"""[compiled] One ceiling on the bytes specwatch holds of responses in order to read them.

An observed JSON body is kept whole until it is complete, to be parsed (at most
`limits.max_response_bytes`); a stream's event is held until its terminator arrives (the same
limit: vLLM's are a few hundred bytes, but one may come in many pieces); both outputs of a
shadow comparison are kept while it runs; and each observation's payload (the body, or a
stream's usage event) waits in the analysis queue until the analysis reads it. Each is bounded
alone, but together they could reach max_concurrent_requests x max_response_bytes plus a full
queue of payloads: gigabytes beside a container limited to 512 MiB. The budget bounds their sum
(`limits.max_observed_bytes`): what would take it past its limit is relayed to the client
whole, as always, but not read, and counted (`parse_errors{reason="memory_budget"}`).

Single-threaded, like everything on the event loop: no lock.
"""

from __future__ import annotations


class ByteBudget:
    """Bytes held against a limit: `take` what is kept, `give` it back when it is let go."""

    __slots__ = ("held", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        """Hold `size` more bytes; False (nothing held) when that would pass the limit."""
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


class Held:
    """What one holder (an exchange, a comparison) has taken from a budget, given back all at
    once by `release` (which may be called again: it then gives nothing)."""

    __slots__ = ("_budget", "size")

    def __init__(self, budget: ByteBudget) -> None:
        self._budget = budget
        self.size = 0

    def take(self, size: int) -> bool:
        if not self._budget.take(size):
            return False
        self.size += size
        return True

    def release(self) -> None:
        self._budget.give(self.size)
        self.size = 0
