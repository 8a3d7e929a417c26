#!/usr/bin/env python3
"""A canned streaming upstream for proxy benchmarks: every POST gets a real vLLM 0.32 SSE stream
(its content events repeated to EVENTS, then its real usage chunk with the speculative `metrics`
block, and [DONE]), each event its own chunked write, GAP seconds apart, the way vLLM writes one
event per engine step. Raw asyncio protocol (uvloop when importable), so its own cost stays small.
  stream_upstream.py PORT [--events 64] [--gap 0.001] [--capture FILE.sse | FILE.jsonl]
"""

import argparse
import asyncio
import base64
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "tests", "fixtures", "vllm-0.32.0-cpu", "stream_usage.sse")


def captures(path):
    with open(path, "rb") as handle:
        if path.endswith(".sse"):
            yield handle.read()
            return
        for line in handle:
            yield base64.b64decode(json.loads(line)["sse_b64"])


def load_events(path, n):
    for raw in captures(path):
        events = [e + b"\n\n" for e in raw.split(b"\n\n") if e.strip()]
        content = [
            e
            for e in events
            if b'"choices":[]' not in e and b"[DONE]" not in e and b'"choices": []' not in e
        ]
        tail = [e for e in events if e not in content]
        if len(content) >= 4 and len(tail) == 2:
            return (content * (n // len(content) + 1))[: max(1, n - 2)] + tail
    raise SystemExit("no usable stream in " + path)


class Upstream(asyncio.Protocol):
    def __init__(self, events, gap):
        self.events, self.gap, self.buf, self.t = events, gap, b"", None

    def connection_made(self, t):
        self.t = t

    def data_received(self, data):
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].lower()
            length = 0
            for line in head.split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if len(self.buf) < head_end + 4 + length:
                return
            self.buf = self.buf[head_end + 4 + length :]
            self.t.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            self.send(0)

    def send(self, i):
        if self.t.is_closing():
            return
        e = self.events[i]
        self.t.write(b"%x\r\n%s\r\n" % (len(e), e))
        if i + 1 < len(self.events):
            asyncio.get_running_loop().call_later(self.gap, self.send, i + 1)
        else:
            self.t.write(b"0\r\n\r\n")


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--events", type=int, default=64)
    p.add_argument("--gap", type=float, default=0.001)
    p.add_argument("--capture", default=DEFAULT)
    a = p.parse_args()
    events = load_events(a.capture, a.events)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(
        lambda: Upstream(events, a.gap), "127.0.0.1", a.port, backlog=4096
    )
    print(
        f"stream upstream :{a.port} {len(events)} events, {sum(map(len, events))} bytes, "
        f"gap {a.gap}s",
        flush=True,
    )
    await srv.serve_forever()


try:
    import uvloop

    uvloop.run(main())
except ImportError:
    asyncio.run(main())
