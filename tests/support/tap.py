"""A TCP tap on loopback: relays a client to an upstream and keeps every byte the upstream
sent, so a test can compare what a server said with what a client got through a proxy."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field


@dataclass
class Tap:
    upstream_host: str
    upstream_port: int
    received: list[bytearray] = field(default_factory=list)  # per connection, server -> client
    server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.upstream_host, self.upstream_port)
        seen = bytearray()
        self.received.append(seen)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, keep: bool) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    if keep:
                        seen.extend(data)
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(ConnectionError, OSError):
                dst.close()

        await asyncio.gather(pump(reader, up_writer, False), pump(up_reader, writer, True))


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes  # de-chunked


def responses(raw: bytes) -> list[Response]:
    """The HTTP/1.1 responses in one connection's bytes, bodies de-chunked."""
    out = []
    at = 0
    while at < len(raw):
        end = raw.index(b"\r\n\r\n", at)
        lines = raw[at:end].decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        at = end + 4
        if headers.get("transfer-encoding") == "chunked":
            body = bytearray()
            while True:
                line_end = raw.index(b"\r\n", at)
                size = int(raw[at:line_end].split(b";")[0], 16)
                at = line_end + 2
                if size == 0:
                    at = raw.index(b"\r\n", at) + 2  # no trailers expected
                    break
                body += raw[at : at + size]
                at += size + 2
            out.append(Response(status, headers, bytes(body)))
        else:
            size = int(headers.get("content-length", "0"))
            out.append(Response(status, headers, raw[at : at + size]))
            at += size
    return out
