"""An SGLang answer whose details specwatch asked for (proxy/exchange.py, engines/sglang.py):
held whole, its head sent with the length it has without them; one too large to hold goes out
as it came, details and all, and is counted."""

from __future__ import annotations

from typing import Any, cast

from specwatch.core.health import Health
from specwatch.proxy.budget import ByteBudget
from specwatch.proxy.exchange import Exchange
from specwatch.proxy.server import ClientConnection

MAX = 4096
ANSWER = b'{"id":"x","choices":[{"text":"hi"}],"usage":{"completion_tokens":2},"sglext":'
DETAILS = b'{"spec_tokens_details":{"spec_verify_ct":1,"spec_num_correct_drafts":1}}}'


class Client:
    def __init__(self) -> None:
        self.heads: list[tuple[int, int | None]] = []
        self.written: list[bytes] = []

    def start(self, status: int, _reason: Any, _headers: Any, length: int | None) -> None:
        assert not self.written, "the head goes before the body"
        self.heads.append((status, length))

    def write(self, data: bytes) -> None:
        assert self.heads, "a body before its head"
        self.written.append(data)

    def end(self) -> None: ...
    def hold(self) -> None: ...
    def flush(self) -> None: ...


def answered(pieces: list[bytes], strip: bool = True) -> tuple[Exchange, Client]:
    client = Client()
    exchange = Exchange(cast(ClientConnection, client), Health(), MAX, ByteBudget(1 << 20), True)
    exchange.strip = strip
    exchange.begin(False, 0.0, capture=False)
    size = str(sum(map(len, pieces))).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", size)]
    exchange.on_head(200, b"OK", head)
    for piece in pieces:
        exchange.on_body(piece)
    exchange.on_complete()
    return exchange, client


async def test_the_answer_goes_out_whole_without_the_details_and_is_read_with_them() -> None:
    whole = ANSWER + DETAILS
    exchange, client = answered([whole[:30], whole[30:]])
    expected = b'{"id":"x","choices":[{"text":"hi"}],"usage":{"completion_tokens":2}}'
    assert client.heads == [(200, len(expected))]
    assert b"".join(client.written) == expected
    assert (exchange.payload, exchange.outcome) == (whole, None)  # specwatch reads them


async def test_an_answer_not_asked_for_goes_out_as_it_comes() -> None:
    whole = ANSWER + DETAILS
    _, client = answered([whole[:30], whole[30:]], strip=False)
    assert client.heads == [(200, len(whole))]
    assert client.written == [whole[:30], whole[30:]]


async def test_one_too_large_to_hold_goes_out_as_it_came_and_is_counted() -> None:
    filler = b'{"text":"' + b"x" * MAX + b'"}'
    whole = b'{"id":"x","big":' + filler + b',"sglext":' + DETAILS
    pieces = [whole[i : i + 1000] for i in range(0, len(whole), 1000)]
    exchange, client = answered(pieces)
    assert client.heads == [(200, len(whole))]  # the upstream's own length, as it came
    assert b"".join(client.written) == whole
    assert (exchange.outcome, exchange.parse_failure) == ("parse_error", "response_too_large")
