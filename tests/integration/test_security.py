"""Nothing leaks: prompts, completions and alerting secrets appear in no output of specwatch."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import orjson
from specwatch import conventions as C
from specwatch.settings import load_settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimServer
from specwatch.upstream.child import free_port

from tests.support.http import eventually, post, scrape, total

SLACK = "https://hooks.slack.test/services/T000/B000/SECRET-SLACK-4f9c"
PAGERDUTY = "PD-ROUTING-KEY-SECRET-7d21"
PROMPT = "PROMPT-MARKER-5521 my password is hunter2"


def secret_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "slack").write_text(SLACK)
    (tmp_path / "pd").write_text(PAGERDUTY)
    return {
        **os.environ,
        "SPECWATCH_ALERTS__SLACK_API_URL_FILE": str(tmp_path / "slack"),
        "SPECWATCH_ALERTS__PAGERDUTY_ROUTING_KEY_FILE": str(tmp_path / "pd"),
        "SPECWATCH_LOG_LEVEL": "debug",
        "SPECWATCH_LOG_FORMAT": "json",
    }


async def test_no_prompt_completion_or_secret_in_logs_status_metrics_or_generated_files(
    sim: tuple[SimServer, str], tmp_path: Path
) -> None:
    env = secret_env(tmp_path)
    outputs: list[bytes] = []
    specwatch = [sys.executable, "-m", "specwatch"]
    for argv in (["generate", "--out", str(tmp_path / "gen")], ["check-config"]):
        done = await asyncio.create_subprocess_exec(
            *specwatch, *argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = await done.communicate()
        assert 0 == done.returncode, err
        outputs += [out, err]
    outputs += [p.read_bytes() for p in (tmp_path / "gen").rglob("*") if p.is_file()]

    port, admin = free_port(), free_port()
    proxy = await asyncio.create_subprocess_exec(
        *specwatch, "proxy", "--upstream", sim[1], "--port", str(port), "--admin-port",
        str(admin), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    completions = []
    try:
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            for _ in range(100):  # until it listens
                try:
                    async with session.get(f"http://127.0.0.1:{admin}/healthz"):
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            for stream in (False, True):
                status, data = await post(
                    session, base + "/v1/completions",
                    {"prompt": PROMPT, "max_tokens": 24, "stream": stream},
                )  # fmt: skip
                assert 200 == status
                if not stream:
                    completions.append(orjson.loads(data)["choices"][0]["text"].strip())
            chat = {"messages": [{"role": "user", "content": PROMPT}], "model": "nope"}
            await post(session, base + "/v1/chat/completions", chat)  # an upstream 404
            async with session.post(base + "/v1/completions", data=PROMPT.encode()) as response:
                await response.read()  # not JSON: a parse error, logged as a count

            async def counted() -> bool:  # every request analysed (the proxy is another process)
                metrics = await scrape(f"http://127.0.0.1:{admin}/metrics")
                return total(metrics, C.REQUESTS + "_total") >= 4

            await eventually(counted)
            for path in ("/status", "/metrics"):
                async with session.get(f"http://127.0.0.1:{admin}{path}") as response:
                    outputs.append(await response.read())
    finally:
        proxy.terminate()
        out, err = await proxy.communicate()
        outputs += [out, err]
    everything = b"\n".join(outputs)
    assert b"sidecar_started" in everything  # the logs were captured: the check means something
    for secret in (SLACK, PAGERDUTY, "PROMPT-MARKER-5521", "hunter2", *completions):
        assert secret.encode() not in everything, secret


async def test_the_admin_port_binds_apart_from_the_proxy(sim: tuple[SimServer, str]) -> None:
    # The admin port's number is held on 127.0.0.1 by a socket that never listens: another
    # test's server could otherwise listen there (same number, other address) and answer.
    reserved = socket.socket()
    reserved.bind(("127.0.0.1", 0))
    port = reserved.getsockname()[1]
    settings = load_settings(
        upstream=sim[1], host="127.0.0.1", port=0, admin_host="127.0.0.2", admin_port=port
    )
    car = Sidecar(settings)
    await car.start()
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.2:{car.ports.admin}/healthz") as response:
                assert 200 == response.status
            try:
                async with session.get(f"http://127.0.0.1:{car.ports.admin}/healthz"):
                    reached = True
            except aiohttp.ClientConnectionError:
                reached = False
            assert not reached
    finally:
        await car.stop()
        reserved.close()
