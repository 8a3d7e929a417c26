"""Replay runs the live analysis again, record for record: after traffic with aborts, upstream
errors and streams cut both ways, `specwatch replay --json` of a pod's cycle log gives every
slice and model the since-start counts its `/status` gave. And a client that reads a stream to
its `[DONE]` and closes before the upstream's last bytes arrive made a completed request, not
an aborted one."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import ROOT
from tests.support.http import by_label, eventually, get_json, scrape, serve, sidecar_settings

CAPTURED = ROOT / "tests" / "fixtures" / "vllm-0.32.0-cpu" / "chat_stream_usage.sse"


async def behave(session: aiohttp.ClientSession, url: str, how: str, stream: bool) -> None:
    """One request: read all, leave mid-body, leave after the finishing chunk, leave after
    the usage chunk it asked for (vLLM's final metrics passed, [DONE] not yet), leave at
    [DONE]; with an upstream fault or none."""
    fault = {"500": "500", "cut": "cut", "truncate": "truncate"}.get(how)
    headers = {"X-Sim-Fail": fault} if fault else {}
    body: dict[str, Any] = {"prompt": "w " * 10, "max_tokens": 40, "stream": stream}
    if how == "after_usage" and stream:
        body["stream_options"] = {"include_usage": True}
    async with session.post(url, json=body, headers=headers) as response:
        with contextlib.suppress(aiohttp.ClientPayloadError):
            if how == "mid_body":
                await response.content.read(60)
            elif how in ("before_done", "after_usage", "at_done") and stream:
                async for line in response.content:
                    if how == "before_done" and b'"finish_reason":"length"' in line:
                        break
                    if how == "after_usage" and b'"choices":[]' in line:
                        break
                    if b"[DONE]" in line:
                        break
            else:
                await response.read()
        response.close()


def slices_of(document: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, int]]:
    return {
        (row["model"], row["ctx_bucket"], row["task"]): row["since_start"]
        for row in (*document["slices"], *document["models"])
    }


async def test_replay_of_the_cycle_log_counts_what_the_live_sidecar_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = SimServer(SimConfig(seed=5, cost=CostModel(target_step_ms=2.0)))
    runner, upstream = await serve(sim.app())
    log = tmp_path / "cycles.jsonl"
    car = Sidecar(sidecar_settings(upstream, cycle_log={"path": log}))
    await car.start()
    sent = 0
    try:
        url = f"http://127.0.0.1:{car.ports.proxy}/v1/completions"
        ways = (
            "all",
            "mid_body",
            "before_done",
            "after_usage",
            "at_done",
            "500",
            "cut",
            "truncate",
        )
        async with aiohttp.ClientSession() as session:
            for _ in range(6):
                for how in ways:
                    for stream in (True, False):
                        await behave(session, url, how, stream)
                        sent += 1
        await car.drained()
        admin = f"http://127.0.0.1:{car.ports.admin}"

        async def all_counted() -> bool:
            samples = await scrape(f"{admin}/metrics")
            outcomes = by_label(samples, C.REQUESTS + "_total", C.Label.OUTCOME)
            return sum(outcomes.values()) >= sent

        await eventually(all_counted, seconds=120)
        live = await get_json(f"{admin}/status")
    finally:
        await car.stop()
        await runner.cleanup()
    outcomes = live["requests_by_outcome"]
    assert outcomes.get(C.Outcome.CLIENT_ABORTED, 0) >= 6, outcomes  # mid-body
    capsys.readouterr()
    assert 0 == main(["replay", "--json", str(log)])
    replayed = json.loads(capsys.readouterr().out)
    assert slices_of(live) == slices_of(replayed)


async def healthy(_request: web.Request) -> web.Response:
    return web.Response()


EVENTS = [e + b"\n\n" for e in CAPTURED.read_bytes().split(b"\n\n") if e.strip()]


async def held_stream(gate: asyncio.Event, held: int) -> tuple[web.AppRunner, str]:
    """An upstream that streams the captured answer but its last `held` pieces (the end of
    the chunked body, or [DONE] and it) until `gate` is set: a client that has what it needs
    leaves first."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in EVENTS[: len(EVENTS) - held + 1]:
            await response.write(event)
        await gate.wait()
        for event in EVENTS[len(EVENTS) - held + 1 :]:
            await response.write(event)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    app.router.add_get("/health", healthy)
    return await serve(app)


async def one_client(car: Sidecar, leave_at: bytes) -> None:
    url = f"http://127.0.0.1:{car.ports.proxy}/v1/chat/completions"
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
        async for line in response.content:
            if line.startswith(leave_at):
                break


async def outcomes_of(car: Sidecar, requests: int = 1) -> dict[str, float]:
    """The outcomes counted, once `requests` are."""
    admin = f"http://127.0.0.1:{car.ports.admin}/metrics"

    async def counted() -> bool:
        outcomes = by_label(await scrape(admin), C.REQUESTS + "_total", C.Label.OUTCOME)
        return sum(outcomes.values()) >= requests

    await eventually(counted, seconds=60)
    return by_label(await scrape(admin), C.REQUESTS + "_total", C.Label.OUTCOME)


async def test_a_stream_read_to_its_done_then_closed_is_complete_not_aborted() -> None:
    """The upstream sends the whole stream, [DONE] included, and keeps its connection open a
    while before the chunked body's end: the client, which has its answer, closes first."""
    assert EVENTS[-1].startswith(b"data: [DONE]")
    assert orjson.loads(EVENTS[-2][len(b"data: ") :])["usage"]  # the usage event before it
    gate = asyncio.Event()
    runner, upstream = await held_stream(gate, held=1)  # only the body's end is held
    car = Sidecar(sidecar_settings(upstream, scrape_interval_seconds=3600.0))
    await car.start()
    try:
        await one_client(car, b"data: [DONE]")
        outcomes = await outcomes_of(car)
    finally:
        gate.set()
        await car.stop()
        await runner.cleanup()
    assert {C.Outcome.OBSERVED: 1.0} == outcomes


async def test_a_client_gone_after_vllms_metrics_is_aborted_counted_and_kept_in_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The client asked for usage, read it and left before [DONE]: vLLM ran the steps and
    specwatch saw them, so the analysis counts them (the outcome stays client_aborted), and
    the cycle log keeps the record: its replay counts the same."""
    gate = asyncio.Event()
    runner, upstream = await held_stream(gate, held=2)  # [DONE] and the body's end held
    log = tmp_path / "cycles.jsonl"
    car = Sidecar(
        sidecar_settings(upstream, scrape_interval_seconds=3600.0, cycle_log={"path": log})
    )
    await car.start()
    try:
        for _ in range(3):
            await one_client(car, b'data: {"id"')  # any line: the usage event is last
        await outcomes_of(car, 3)
        live = await get_json(f"http://127.0.0.1:{car.ports.admin}/status")
    finally:
        gate.set()
        await car.stop()
        await runner.cleanup()
    assert live["requests_by_outcome"] == {C.Outcome.CLIENT_ABORTED: 3}
    assert 3 == sum(row["since_start"]["requests"] for row in live["models"])
    capsys.readouterr()
    assert 0 == main(["replay", "--json", str(log)])
    assert slices_of(live) == slices_of(json.loads(capsys.readouterr().out))
