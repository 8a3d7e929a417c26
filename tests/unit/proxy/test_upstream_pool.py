"""The upstream keep-alive pool: the warmest idle connection first, idle ones closed after
`keepalive` seconds by the pool's one sweep timer, a stale one never handed out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from specwatch.proxy.pool import UpstreamPool

from tests.support.http import eventually


@pytest.fixture
async def listener() -> AsyncIterator[tuple[str, list[asyncio.StreamWriter]]]:
    """A TCP server that accepts and keeps every connection: the pool's upstream."""
    accepted: list[asyncio.StreamWriter] = []

    async def keep(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(keep, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", accepted
    server.close()


async def test_idle_connections_are_reused_warmest_first_and_closed_after_keepalive(
    listener: tuple[str, list[asyncio.StreamWriter]],
) -> None:
    base, accepted = listener
    pool = UpstreamPool(base, keepalive=0.2, read_timeout=5.0)
    first, second = await pool.acquire(), await pool.acquire()
    pool.release(first)
    pool.release(second)
    assert second is await pool.acquire()  # the most recently released
    pool.release(second)

    def closed() -> bool:
        return all(c.transport is None or c.transport.is_closing() for c in (first, second))

    await eventually(closed, seconds=5.0)
    third = await pool.acquire()
    assert third not in (first, second)
    await eventually(lambda: len(accepted) == 3)
    pool.close()


async def test_a_connection_past_its_keepalive_is_not_handed_out_before_the_sweep(
    listener: tuple[str, list[asyncio.StreamWriter]],
) -> None:
    base, _ = listener
    pool = UpstreamPool(base, keepalive=60.0, read_timeout=5.0)
    connection = await pool.acquire()
    pool.release(connection)
    pool.keepalive = 0.0  # as if a minute had passed with the sweep not yet due
    fresh = await pool.acquire()
    assert fresh is not connection
    assert connection.transport is not None
    assert connection.transport.is_closing()
    pool.close()
