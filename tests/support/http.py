"""Reading /metrics the way Prometheus would, posting, serving on loopback, and polling."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families
from specwatch.settings import Settings, load_settings

Samples = dict[str, list[tuple[dict[str, str], float]]]


async def get_json(url: str) -> Any:
    """The JSON document at `url` (specwatch's /status, for one)."""
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.json()


async def scrape(url: str) -> Samples:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert 200 == response.status
        text = await response.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def total(samples: Samples, name: str, **match: str) -> float:
    return sum(
        value
        for labels, value in samples.get(name, [])
        if all(labels.get(k) == v for k, v in match.items())
    )


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in samples.get(name, []):
        out[labels[label]] = out.get(labels[label], 0.0) + value
    return out


async def post(
    session: aiohttp.ClientSession, url: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    async with session.post(url, json=body, headers=headers or {}) as response:
        return response.status, await response.read()


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    """Serve an app on a free loopback port, cancelling handlers on disconnect like vLLM."""
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


def sidecar_settings(upstream: str, **overrides: Any) -> Settings:
    return load_settings(upstream=upstream, port=0, admin_port=0, **overrides)


async def eventually(
    check: Callable[[], bool | Awaitable[bool]], seconds: float = 10.0, every: float = 0.05
) -> None:
    """Poll `check` until it holds; fail when it has not within `seconds` (no fixed sleeps:
    a slow machine waits longer, a fast one not at all)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        assert asyncio.get_running_loop().time() < deadline, f"still false after {seconds} s"
        await asyncio.sleep(every)


async def until_ok(
    url: str, seconds: float, every: float = 0.1, alive: Callable[[], None] | None = None
) -> float:
    """Seconds until GET `url` answered 200 (a server starting up); `alive` may raise first,
    e.g. when the process under test died."""
    started = asyncio.get_running_loop().time()
    async with aiohttp.ClientSession() as session, asyncio.timeout(seconds):
        while True:
            if alive is not None:
                alive()
            try:
                async with session.get(url) as response:
                    if response.status == 200:
                        return asyncio.get_running_loop().time() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(every)
