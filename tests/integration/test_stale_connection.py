"""A kept upstream connection closed under the next request (llama.cpp's server closes one after
every streamed answer, without saying so): the request goes out once more on a new connection,
the client never sees it; a request whose answer had begun, or that went out on a new
connection, is never sent twice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp
from specwatch.sidecar.sidecar import Sidecar

from tests.support.http import post, sidecar_settings

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
NOT_HERE = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
PATH = b"/v1/completions"

# (the how-many-th completion request on this connection, the writer) -> keep the connection
Behaviour = Callable[[int, asyncio.StreamWriter], bool]


async def read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One whole request off the connection: its path; None at the connection's end."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    await reader.readexactly(length)
    return head.split(b" ", 2)[1]


@asynccontextmanager
async def upstream(behave: Behaviour) -> AsyncIterator[tuple[list[int], int]]:
    """A raw HTTP/1.1 upstream: the completion requests each connection received (other paths,
    the sidecar's own probes, get a 404), and its port."""
    seen: list[int] = []

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        mine = None
        while (path := await read_request(reader)) is not None:
            if path != PATH:
                writer.write(NOT_HERE)
                continue
            if mine is None:
                seen.append(0)
                mine = len(seen) - 1
            seen[mine] += 1
            if not behave(seen[mine], writer):
                break
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    try:
        yield seen, server.sockets[0].getsockname()[1]
    finally:
        server.close()


@asynccontextmanager
async def proxy_to(port: int) -> AsyncIterator[Sidecar]:
    settings = sidecar_settings(f"http://127.0.0.1:{port}", limits={"version_wait_seconds": 1.0})
    car = Sidecar(settings)
    await car.start()
    try:
        yield car
    finally:
        await car.stop()


async def requests(car: Sidecar, n: int = 2) -> list[int | str]:
    """`n` requests one after another, on one client connection (so on one kept upstream):
    each one's status, or "cut" when its body was cut short."""
    statuses: list[int | str] = []
    url = f"http://127.0.0.1:{car.ports.proxy}{PATH.decode()}"
    async with aiohttp.ClientSession() as session:
        for _ in range(n):
            try:
                status, _ = await post(session, url, {})
                statuses.append(status)
            except aiohttp.ClientPayloadError:
                statuses.append("cut")
    return statuses


def sent_again(car: Sidecar) -> int:
    (pool,) = car.proxy._pools.values()  # the one upstream's pool
    return pool.sent_again


async def test_a_request_on_a_connection_closed_under_it_goes_out_again() -> None:
    def answer_once(n: int, writer: asyncio.StreamWriter) -> bool:
        if n == 1:
            writer.write(ANSWER)
            return True
        return False  # the next request on this kept connection: closed, never answered

    async with upstream(answer_once) as (seen, port), proxy_to(port) as car:
        assert [200, 200, 200] == await requests(car, 3)
        # each kept connection took a request it never answered; each went out again
        assert [2, 2, 1] == seen
        assert 2 == sent_again(car)


async def test_an_answer_that_had_begun_is_never_asked_twice() -> None:
    def begin_then_close(n: int, writer: asyncio.StreamWriter) -> bool:
        if n == 1:
            writer.write(ANSWER)
            return True
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{")  # then gone
        return False

    async with upstream(begin_then_close) as (seen, port), proxy_to(port) as car:
        # the head went out: the client sees its body cut, as it would direct
        assert [200, "cut"] == await requests(car)
        assert [2] == seen
        assert 0 == sent_again(car)


async def test_a_new_connection_closed_before_answering_is_a_502_not_a_retry() -> None:
    def never_answer(n: int, writer: asyncio.StreamWriter) -> bool:
        return False

    async with upstream(never_answer) as (seen, port), proxy_to(port) as car:
        assert [502] == await requests(car, 1)
        assert [1] == seen
        assert 0 == sent_again(car)
