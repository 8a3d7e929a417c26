"""Reading /metrics the way Prometheus would, and small HTTP helpers."""

from __future__ import annotations

from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[str, list[tuple[dict[str, str], float]]]


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
