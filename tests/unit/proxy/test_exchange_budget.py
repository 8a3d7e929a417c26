"""An exchange's share of the byte budget, piece by piece (proxy/exchange.py, budget.py); the
proxy's integration tests (tests/integration/test_limits.py) check the same through sockets."""

from __future__ import annotations

from typing import Any, cast

from specwatch.core.health import Health
from specwatch.proxy.budget import ByteBudget
from specwatch.proxy.exchange import Exchange
from specwatch.proxy.server import ClientConnection

MAX = 4096
EVENT = b'data: {"choices":[{"text":"' + b"x" * 1000 + b'"}]}\n\n'
DONE = b"data: [DONE]\n\n"


class Client:
    """What an Exchange calls on its client connection; keeps what was written."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def start(self, *_: Any) -> None: ...
    def end(self) -> None: ...
    def hold(self) -> None: ...
    def flush(self) -> None: ...


def exchange(budget: ByteBudget, client: Client) -> Exchange:
    return Exchange(cast(ClientConnection, client), Health(), MAX, budget, True)


async def test_a_shadowed_stream_too_large_to_compare_lets_go_of_its_bytes_at_once() -> None:
    budget, client = ByteBudget(1 << 20), Client()
    stream = exchange(budget, client)
    stream.begin(True, 0.0, capture=True)
    stream.on_head(200, b"OK", [(b"content-type", b"text/event-stream")])
    stream.on_body(EVENT)
    assert len(EVENT) == budget.held  # held to be compared
    for _ in range(MAX // len(EVENT) + 1):
        stream.on_body(EVENT)
    assert (None, 0) == (stream.capture, budget.held)  # past the limit: not compared, let go
    stream.on_body(EVENT)
    assert 0 == budget.held
    stream.on_body(DONE)
    stream.on_complete()
    assert stream.settle() is None  # nothing read to carry
    assert EVENT * (MAX // len(EVENT) + 3) + DONE == b"".join(client.written)


async def test_a_shadowed_stream_without_room_in_the_budget_is_not_compared() -> None:
    budget, client = ByteBudget(len(EVENT) + 10), Client()
    stream = exchange(budget, client)
    stream.begin(True, 0.0, capture=True)
    stream.on_head(200, b"OK", [(b"content-type", b"text/event-stream")])
    stream.on_body(EVENT)
    stream.on_body(EVENT)
    assert (None, 0) == (stream.capture, budget.held)
    stream.on_body(DONE)
    stream.on_complete()
    assert EVENT * 2 + DONE == b"".join(client.written)  # relayed whole all the same


async def test_a_usage_event_without_room_in_the_budget_is_counted_unread() -> None:
    """A stream holds nothing while it runs; its usage event is what the analysis reads, and
    when the budget is full it is dropped (the client has had it all the same)."""
    usage = b'data: {"id":"x","model":"m","choices":[],"usage":{"prompt_tokens":1}}\n\n'
    for room, read in ((1 << 20, True), (10, False)):
        budget, client = ByteBudget(1 << 20), Client()
        assert budget.take(budget.limit - room)  # the rest of the traffic's share
        stream = exchange(budget, client)
        stream.begin(True, 0.0, capture=False)
        stream.on_head(200, b"OK", [(b"content-type", b"text/event-stream")])
        for piece in (EVENT, usage, DONE):
            stream.on_body(piece)
        stream.on_complete()
        carried = stream.settle()
        held = 0 if carried is None else carried.size
        assert EVENT + usage + DONE == b"".join(client.written)
        if read:
            assert (None, len(stream.payload or b"")) == (stream.outcome, held)
            assert held > 0
        else:
            assert (0, None, "parse_error", "memory_budget") == (
                held,
                stream.payload,
                stream.outcome,
                stream.parse_failure,
            )
        assert budget.limit - room + held == budget.held


def test_the_budget_holds_up_to_its_limit_and_not_a_byte_past_it() -> None:
    budget = ByteBudget(100)
    assert budget.take(60)
    assert budget.take(40)
    assert not budget.take(1)
    assert 100 == budget.held  # a refusal holds nothing
    budget.give(40)
    assert budget.take(40)
    assert not budget.take(1)
