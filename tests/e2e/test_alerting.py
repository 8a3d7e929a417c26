"""Alerts end to end: real Prometheus and Alertmanager, specwatch in front of the simulator,
local HTTP receivers standing in for Slack and PagerDuty.

The generated rules and Alertmanager config are rendered with a time scale of 60 (an hour is a
minute). Load runs on one slice; the simulator's draft then gets worse for it, and the test
waits for the PagerDuty event and the Slack message that name the slice and its runbook, then,
after the draft recovers, for the resolved messages — and checks that no yellow warning came
on the way back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from specwatch.gen.writer import ALERTING_RULES, ALERTMANAGER, RECORDING_RULES, TEMPLATE, render
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import AcceptanceModel, Drop
from specwatch.sim.server import SimConfig, SimServer
from specwatch.upstream.child import free_port

from tests.support.http import serve, sidecar_settings
from tests.support.servers import started
from tests.support.tools import binary

pytestmark = pytest.mark.e2e

TIME_SCALE = 60
SLICE = {"model": "sim-llama", "ctx_bucket": "0-512", "task": "code"}


@dataclass
class Receiver:
    """Slack and PagerDuty webhooks on loopback: every POST body, in order."""

    url: str = ""
    slack: list[dict[str, Any]] = field(default_factory=list)
    pagerduty: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    received = Receiver()

    async def slack(request: web.Request) -> web.Response:
        received.slack.append(await request.json())
        return web.Response(text="ok")

    async def pagerduty(request: web.Request) -> web.Response:
        received.pagerduty.append(await request.json())
        return web.json_response({"status": "success", "dedup_key": "x"}, status=202)

    app = web.Application()
    app.router.add_post("/slack", slack)
    app.router.add_post("/pagerduty", pagerduty)
    runner, received.url = await serve(app)
    yield received
    await runner.cleanup()


async def until(what: str, check: Callable[[], bool], seconds: float, logs: list[Path]) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # polling what the receivers collected
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in logs)
            raise AssertionError(f"timed out waiting for {what}\n{tails}")
        await asyncio.sleep(0.5)


async def load(proxy: str, stop: asyncio.Event) -> None:
    """~20 short code requests a second on one slice, until told to stop."""
    async with aiohttp.ClientSession() as session:
        i = 0
        while not stop.is_set():
            body = {"prompt": f"def f{i % 50}(x): return x", "max_tokens": 32, "temperature": 0}
            async with session.post(
                proxy + "/v1/completions", json=body, headers={"X-Task-Type": "code"}
            ) as response:
                await response.read()
            i += 1
            await asyncio.sleep(0.05)


def firing(messages: list[dict[str, Any]], alertname: str, status: str) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        text = yaml.safe_dump(message)
        if alertname in text and status in text:
            out.append(message)
    return out


async def test_a_red_slice_pages_and_resolves_through_real_prometheus_and_alertmanager(
    receiver: Receiver, tmp_path: Path
) -> None:
    prometheus, alertmanager = binary("prometheus"), binary("prometheus-alertmanager")
    sim = SimServer(SimConfig(sleep=False))
    sim_runner, sim_url = await serve(sim.app())
    car = Sidecar(sidecar_settings(sim_url))
    await car.start()
    prom_port, am_port = free_port(), free_port()
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "slack-url").write_text(receiver.url + "/slack")
    (secrets / "pd-key").write_text("test-routing-key")
    settings = sidecar_settings(
        sim_url,
        alerts={
            "slack_api_url_file": str(secrets / "slack-url"),
            "pagerduty_routing_key_file": str(secrets / "pd-key"),
            "pagerduty_url": receiver.url + "/pagerduty",
        },
    )
    for name, data in render(settings, time_scale=TIME_SCALE).items():
        if name in (RECORDING_RULES, ALERTING_RULES, ALERTMANAGER, TEMPLATE):
            (tmp_path / Path(name).name).write_bytes(data)
    (tmp_path / "prometheus.yml").write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [Path(RECORDING_RULES).name, Path(ALERTING_RULES).name],
                "alerting": {
                    "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]
                },
                "scrape_configs": [
                    {
                        "job_name": "specwatch",
                        "static_configs": [{"targets": [f"127.0.0.1:{car.ports.admin}"]}],
                    }
                ],
            }
        )
    )
    logs = [tmp_path / "prometheus.log", tmp_path / "alertmanager.log"]
    stop = asyncio.Event()
    traffic = asyncio.create_task(load(f"http://127.0.0.1:{car.ports.proxy}", stop))
    try:
        with (
            started(
                [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                 f"--storage.tsdb.path={tmp_path / 'prom-data'}",
                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                logs[0],
            ),
            started(
                [alertmanager, f"--config.file={tmp_path / Path(ALERTMANAGER).name}",
                 f"--storage.path={tmp_path / 'am-data'}",
                 f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
                logs[1],
            ),
        ):  # fmt: skip
            # 15 scaled minutes of a good draft first, so that the page comes from the drop
            await asyncio.sleep(15)  # waits out: history before the drop, not a state
            sim.acceptance = AcceptanceModel(drops=(Drop(after=0.0, factor=0.35, task="code"),))

            def paged() -> bool:
                return bool(firing(receiver.pagerduty, "SpecDecodeSliceRed", "trigger")) and bool(
                    firing(receiver.slack, "SpecDecodeSliceRed", "FIRING")
                )

            await until("the page for the red slice", paged, 150, logs)
            (event,) = firing(receiver.pagerduty, "SpecDecodeSliceRed", "trigger")[:1]
            details = event["payload"]["custom_details"]
            assert "model=sim-llama ctx_bucket=0-512 task=code" in details["slice"]
            assert details["zone"] == "red"
            # no runbook link is made up: the alert brings its runbook's steps
            assert details["runbook"].startswith("- Lower K (`num_speculative_tokens`)")
            assert "runbook_url" not in details
            assert "test-routing-key" == event["routing_key"]
            (message,) = firing(receiver.slack, "SpecDecodeSliceRed", "FIRING")[:1]
            attachment = message["attachments"][0]
            assert "sim-llama / 0-512 / code" in attachment["text"]
            assert "what to do:\n- Lower K" in attachment["text"]
            assert "#specwatch-page" == message["channel"]

            sim.acceptance = AcceptanceModel()  # the draft recovers

            def resolved() -> bool:
                return bool(firing(receiver.pagerduty, "SpecDecodeSliceRed", "resolve")) and bool(
                    firing(receiver.slack, "SpecDecodeSliceRed", "RESOLVED")
                )

            await until("the resolved messages", resolved, 150, logs)
            await asyncio.sleep(20)  # waits out: the yellow alert's `for` (scaled): an absence
            assert [] == firing(receiver.slack, "SpecDecodeSliceYellow", "FIRING")
            titles = [m["attachments"][0]["title"] for m in receiver.slack]
            print("\nSlack messages received:\n" + "\n".join(titles))
    finally:
        stop.set()
        await traffic
        await car.stop()
        await sim_runner.cleanup()
