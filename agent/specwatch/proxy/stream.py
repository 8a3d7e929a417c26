"""[compiled] An SSE stream as the client must get it, and what specwatch reads from it: pure, no
I/O.

Bytes in, bytes out. When the client asked for usage itself (`inject` False) every chunk goes
out unchanged the moment it arrives; the events are only looked at. When specwatch asked vLLM
for usage on the client's behalf (`inject` True), the usage event is taken out again, and the
last content chunk is held until it is known whether usage follows, to put back the
`system_fingerprint` vLLM moves into the usage chunk: the client gets exactly the stream it
would have got without specwatch. Unless vLLM sends usage unasked (`--enable-force-include-
usage`, which also puts usage in every content chunk): a finishing chunk with usage says so, and
the usage event then goes to the client as it would direct. When specwatch asked SGLang for
its details (`strip` True), they come out of the chunk of their own that carries them, and the
chunk goes when nothing the client asked for is left in it (engines/sglang.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from specwatch.conventions import ParseReason
from specwatch.engines import sglang
from specwatch.engines.vllm.response import (
    carries_usage,
    event_data,
    finishes,
    is_details_event,
    is_usage_event,
)
from specwatch.engines.vllm.usage import restore_fingerprint
from specwatch.proxy.sse import SseSplitter

if TYPE_CHECKING:
    from specwatch.proxy.budget import Held


# Byte searches here are `find`, not `in` (why: engines/vllm/response.py).
_DONE = b"data: [DONE]\n\n"


NOT_ONE_EVENT, CONTENT_EVENT, ONE_EVENT, FINISHING_EVENT, USAGE_EVENT = 0, 1, 2, 3, 4
# the per-request data a finishing chunk may carry: some vLLM builds' per-choice block,
# TensorRT-LLM's; llama.cpp's `timings` (with usage, which it sends unasked there); SGLang's
# `meta_info`
_PER_REQUEST_DATA = (b'"speculative_decoding', b'"timings"', b'"meta_info"')
# what a finishing chunk may carry that the rewriter keeps (SGLang's details too)
_OWN_DATA = (*_PER_REQUEST_DATA, b'"sglext"')


def one_event_kind(chunk: bytes) -> int:
    """What kind of chunk the rewriter has. NOT_ONE_EVENT: anything but one whole one-line
    event (a line feed only in the `\\n\\n` at its end, no `\\r`); of those, CONTENT_EVENT:
    its choice has not finished (so neither the usage chunk, [DONE] nor an error event);
    USAGE_EVENT: vLLM's usage chunk (`"usage"`, `"choices":[]`; not SGLang's `"usage":null`,
    which its serializer writes on every chunk, its details chunk included); FINISHING_EVENT:
    a finishing chunk with nothing the rewriter keeps (no usage, none of `_OWN_DATA`, not an error);
    ONE_EVENT: any other (the splitter would give it back as it is). Searches from the end
    first, where `finish_reason` sits in vLLM's chunks. It runs once per streamed event: the
    compiled build has it in C (proxy/_fastpath.c, a byte search there is a memmem where here
    it is a method call whose arguments are parsed), this is the reference and the pure
    build's."""
    if not (
        chunk.endswith(b"\n\n")
        and chunk.find(b"\n", 0, len(chunk) - 2) < 0
        and chunk.find(b"\r") < 0
    ):
        return NOT_ONE_EVENT
    if chunk.rfind(b'"finish_reason":null') >= 0:
        return CONTENT_EVENT
    if chunk.find(b'"usage"') >= 0 and chunk.find(b'"usage":null') < 0:  # SGLang's null
        return USAGE_EVENT if chunk.find(b'"choices":[]') >= 0 else ONE_EVENT
    if (
        chunk.find(b'"finish_reason":') >= 0
        and not chunk.startswith(b'data: {"error"')
        and all(chunk.find(own) < 0 for own in _OWN_DATA)
    ):
        return FINISHING_EVENT
    return ONE_EVENT


event_kind: Callable[[bytes], int]
try:
    from specwatch.proxy._fastpath import event_kind
except ImportError:  # the pure build
    event_kind = one_event_kind


class StreamRewriter:
    """Feed the upstream's chunks; send what `feed` and `finish` return, in order."""

    __slots__ = (
        "_forced",
        "_held",
        "_inject",
        "_rewrite",
        "_splitter",
        "_strip",
        "choice_stats",
        "done",
        "errored",
        "fast",
        "parse_failure",
        "usage",
    )

    def __init__(
        self, inject: bool, max_event_bytes: int, room: Held | None = None, strip: bool = False
    ) -> None:
        self._inject = inject
        self._strip = strip  # specwatch asked SGLang for its details: their chunk comes out
        self._rewrite = inject or strip  # else every chunk goes out as it came
        self._forced = False  # vLLM sends usage whether asked or not: nothing to take out
        self._splitter = SseSplitter(max_event_bytes, room)  # room: for a partial event
        self._held: bytes | None = None  # the last content chunk, until we know if usage follows
        self.usage: bytes | None = None  # the final usage event, as vLLM sent it
        # the event with the per-request block when it is not the usage chunk: the finishing
        # chunk of some vLLM builds (per choice), TensorRT-LLM's and llama.cpp's; SGLang's
        # sglext chunk
        self.choice_stats: bytes | None = None
        self.done = False  # `data: [DONE]` was seen
        self.errored = False  # an error event was seen
        self.parse_failure: str | None = None  # set by finish()
        self.fast = True  # the one-event path below (tests turn it off to compare with the general)

    def feed(self, chunk: bytes) -> bytes:
        """The bytes the client gets now for this chunk (b"" while something is held)."""
        kind = event_kind(chunk) if self.fast and self._splitter.idle else NOT_ONE_EVENT
        if kind == CONTENT_EVENT:
            # The common case: the chunk is one whole content event, neither usage, [DONE],
            # an error nor a finishing chunk.
            held, self._held = self._held, None
            return chunk if held is None or not self._inject else held + chunk
        if kind == FINISHING_EVENT:  # the general path below, for this kind, in short
            if not self._inject:
                return chunk
            held, self._held = self._held, chunk  # until it is known whether usage follows
            return held or b""
        if kind == USAGE_EVENT and self._inject and not self._forced:  # likewise
            self.usage = chunk
            if self._held is not None:
                self._held = restore_fingerprint(self._held, chunk)
            return b""
        forward: list[bytes] = []
        # one whole event, as the splitter would give it (nothing is held in it)
        events = [chunk] if kind != NOT_ONE_EVENT else self._splitter.feed(chunk)
        for event in events:
            ending: bool | None = None  # finishes(event), once asked
            if event == _DONE:  # as vLLM writes it: none of the searches below
                self.done, ending = True, False
            elif is_usage_event(event):
                self.usage = event
                if self._inject and not self._forced:
                    if self._held is not None:
                        self._held = restore_fingerprint(self._held, event)
                    continue
            elif event.find(b"[DONE]") >= 0 and event_data(event) == b"[DONE]":
                self.done = True
            elif event.startswith(b'data: {"error"'):
                self.errored = True
            elif (ending := finishes(event)) and any(
                event.find(data) >= 0 for data in _PER_REQUEST_DATA
            ):
                self.choice_stats = event  # the per-request data on the finishing chunk
            elif is_details_event(event):
                self.choice_stats = event  # SGLang's details come in a chunk of their own
                data = event_data(event) if self._strip else None
                stripped = None if data is None else sglang.without_details(data)
                if stripped is not None:
                    if stripped.find(b'"sglext"') < 0:
                        continue  # sent only for what the client did not ask: it never was
                    event = b"data: " + stripped + b"\n\n"
                    ending = None  # another event now
            if self._inject:
                if self._held is not None:
                    forward.append(self._held)
                    self._held = None
                if ending is None:
                    ending = finishes(event)
                if ending:
                    # usage in a content chunk: vLLM's continuous usage, which it sends only
                    # when it includes usage anyway (asked by nobody here but forced)
                    self._forced = self._forced or carries_usage(event)
                    self._held = event
                    continue
                forward.append(event)
            elif self._strip:
                forward.append(event)
        if not self._rewrite:
            return chunk
        return b"".join(forward)

    def finish(self) -> bytes:
        """The upstream's body ended: what is still to send, and why it was incomplete."""
        rest = self._splitter.flush()
        if self._splitter.oversized:
            self.parse_failure = ParseReason.OVERSIZED_EVENT
        elif self._splitter.over_budget:
            self.parse_failure = ParseReason.MEMORY_BUDGET
        elif rest.strip() or not self.done:
            self.parse_failure = ParseReason.TRUNCATED_STREAM
        if not self._rewrite:
            return b""  # every byte went out as it came
        held, self._held = self._held or b"", None
        return held + rest

    def drop(self) -> None:
        """The exchange is over (the client left, the upstream failed): a partial event is let
        go, and what it held of the budget given back."""
        self._splitter.drop()
