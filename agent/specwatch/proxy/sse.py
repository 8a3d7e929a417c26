"""[compiled] Server-sent events as vLLM streams them: a byte stream split into whole events.

Pure, no I/O. The proxy relays every byte as it comes; the splitter only finds where each
event ends (proxy/stream.py reads the usage event and the finishing chunk from them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specwatch.proxy.budget import Held

# Byte searches here are `find`, not `in` (why: engines/vllm/response.py).
_SEPARATORS = (b"\n\n", b"\r\n\r\n", b"\r\r")


class SseSplitter:
    """Split a byte stream into whole SSE events, each with its terminator, bytes unchanged.

    A partial event is held (at most `max_event_bytes`, and while `room` has room for it:
    the proxy's byte budget, proxy/budget.py) until its terminator arrives. It grows in
    place and only the new bytes (and the 3 before them, where a terminator may begin) are
    searched, so an event that arrives in many small pieces costs time linear in its size
    (joining and rescanning at every piece is quadratic; benchmarks/sse_pieces.py).
    """

    __slots__ = ("_cr", "_pending", "_room", "max_event_bytes", "over_budget", "oversized")

    def __init__(self, max_event_bytes: int, room: Held | None = None) -> None:
        self._pending = bytearray()
        self._cr = False  # a `\r` in _pending: its terminator may be one of the other two
        self._room = room  # what the held partial event takes of a byte budget
        self.max_event_bytes = max_event_bytes
        self.oversized = False
        self.over_budget = False

    def feed(self, chunk: bytes) -> list[bytes]:
        pending = self._pending
        if pending:
            seen = len(pending)
            pending += chunk
            self._cr = self._cr or chunk.find(b"\r") >= 0
            if _find_separator(pending, max(0, seen - 3), not self._cr)[0] < 0:
                return self._hold(seen)  # still no whole event: nothing joined, nothing out
            data = bytes(pending)  # one copy per event, however many pieces it came in
            pending.clear()
            plain = not self._cr
        else:
            data = chunk
            plain = data.find(b"\r") < 0  # the usual case: only one separator to look for
        events: list[bytes] = []
        start = 0
        while True:
            if plain:  # inline: this runs once per event the rewriter's fast path does not take
                end, sep_len = data.find(b"\n\n", start), 2
            else:
                end, sep_len = _find_separator(data, start, plain)
            if end < 0:
                break
            events.append(data[start : end + sep_len])
            start = end + sep_len
        if self._room is not None and self._room.size:
            self._room.release()  # what was held went out whole
        if start < len(data):
            pending += memoryview(data)[start:]
            self._cr = not plain and pending.find(b"\r") >= 0
            events.extend(self._hold(0))
        return events

    def _hold(self, charged: int) -> list[bytes]:
        """Keep the partial event, of which `charged` bytes are taken from the room already;
        past the event limit or the room, pass it on as an event so nothing is held back."""
        pending = self._pending
        if len(pending) > self.max_event_bytes:
            self.oversized = True  # not SSE as we know it
        elif self._room is None or self._room.take(len(pending) - charged):
            return []
        else:
            self.over_budget = True
        out = bytes(pending)
        pending.clear()
        if self._room is not None:
            self._room.release()
        return [out]

    @property
    def idle(self) -> bool:
        """Nothing held back from earlier chunks."""
        return not self._pending

    def flush(self) -> bytes:
        """Bytes after the last terminator (a truncated stream leaves some)."""
        if not self._pending:
            return b""
        rest = bytes(self._pending)
        self._pending.clear()
        if self._room is not None:
            self._room.release()
        return rest

    def drop(self) -> None:
        """Let a partial event go, and take nothing of the room from now on (bytes that still
        arrive for a request that is over are held, if at all, outside the budget)."""
        self.flush()
        self._room = None


def _find_separator(data: bytes | bytearray, start: int, plain: bool) -> tuple[int, int]:
    """Where the first terminator from `start` begins, and its length ((-1, 0): none);
    `plain`: no `\r` in data, so only `\n\n` can be one."""
    if plain:
        return data.find(b"\n\n", start), 2
    best, best_len = -1, 0
    for sep in _SEPARATORS:
        at = data.find(sep, start)
        if at >= 0 and (best < 0 or at < best):
            best, best_len = at, len(sep)
    return best, best_len
