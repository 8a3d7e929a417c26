"""`specwatch serve -- <server>` with the simulator as the child: the wrap path end to end.

The real-vLLM versions of these tests are in tests/e2e; these run in seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil
import pytest
from specwatch import conventions as C
from specwatch.upstream.child import free_port, prepare_command

from tests.support import assert_status_valid
from tests.support.http import eventually, post, scrape, total, until_ok
from tests.support.workloads import mixed_requests

SPECWATCH = [sys.executable, "-m", "specwatch"]


def test_prepare_command_adds_only_what_is_missing() -> None:
    command = prepare_command(
        ["vllm", "serve", "m", "--port=8123", "--per-request-spec-decode-metrics", "summary"]
    )
    assert ("--enable-per-request-metrics", "--host", "127.0.0.1") == command.added
    assert "http://127.0.0.1:8123" == command.upstream
    server = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]
    bare = prepare_command([*server, "--speculative-config", '{"method": "ngram"}'])
    assert bare.added[:3] == (
        "--per-request-spec-decode-metrics",
        "detailed",
        "--enable-per-request-metrics",
    )
    assert "--port" in bare.added
    # Without speculation vLLM 0.32 refuses the spec-metrics flag (found by `bench --sweep-k`,
    # whose baseline is such a server): it is not added.
    plain = prepare_command(server)
    assert "--per-request-spec-decode-metrics" not in plain.added
    assert "--enable-per-request-metrics" in plain.added


class Served:
    def __init__(self, process: subprocess.Popen[bytes], proxy: str, admin: str) -> None:
        self.process, self.proxy, self.admin = process, proxy, admin

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)


async def wait_ready(admin: str, seconds: float = 30.0) -> None:
    await until_ok(admin + "/readyz", seconds)


@contextmanager
def serve(tmp_path: Path, *child: str, extra: tuple[str, ...] = ()) -> Iterator[Served]:
    port, admin = free_port(), free_port()
    argv = [
        *SPECWATCH, "serve", "--port", str(port), "--admin-port", str(admin),
        "--scrape-interval", "0.3", "--cycle-log", str(tmp_path / "cycles.jsonl"), *extra,
        "--", *SPECWATCH, "sim", "--log-stats-interval", "0.5", *child,
    ]  # fmt: skip
    env = {**os.environ, "SPECWATCH_SERVE__EXIT_GRACE_SECONDS": "2"}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    served = Served(process, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{admin}")
    try:
        yield served
    finally:
        # the child runs in its own process group: kill it too, or it outlives the test
        leftovers = served.descendants() if process.poll() is None else []
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        for leftover in leftovers:
            with contextlib.suppress(psutil.NoSuchProcess):
                leftover.kill()


async def settle(served: Served, requests: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """/metrics once every request is counted and both a scrape of vLLM's counters and one of
    its stats lines came after them: polled for, not waited out (120 s: a coverage that never
    reaches 1, or counts that never agree, fail here)."""

    def caught_up(metrics: dict[str, list[tuple[dict[str, str], float]]], status: Any) -> bool:
        drafted = total(metrics, C.DRAFT_TOKENS + "_total")
        scraped = sum(m["since_start"]["draft_tokens"] for m in status["vllm"]["models"])
        # coverage compares the proxy's count and vLLM's between the same scrapes: a request
        # that vLLM counted before a scrape and the proxy read after it is matched at the next
        return (
            total(metrics, C.REQUESTS + "_total") >= requests
            and drafted == scraped
            and drafted == total(metrics, C.VLLM_LOG_DRAFT_TOKENS + "_total")
            and total(metrics, C.COVERAGE_RATIO) == 1.0
        )

    async with asyncio.timeout(120), aiohttp.ClientSession() as session:
        while True:
            metrics = await scrape(served.admin + "/metrics")
            async with session.get(served.admin + "/status") as response:
                status = await response.json()
            if caught_up(metrics, status):
                return metrics
            await asyncio.sleep(0.1)


async def test_serve_reconciles_with_the_childs_counters_and_its_log_and_replays_exactly(
    tmp_path: Path,
) -> None:
    with serve(tmp_path) as served:
        await wait_ready(served.admin)
        requests = mixed_requests(seed=3, n=30)
        async with aiohttp.ClientSession() as session:
            for path, body, headers in requests:
                status, _ = await post(session, served.proxy + path, body, headers)
                assert 200 == status
            metrics = await settle(served, len(requests))
            upstream = await scrape(served.proxy + "/metrics")  # vLLM's /metrics, passed through
            async with session.get(served.admin + "/status") as response:
                live = await response.json()
        steps = total(upstream, C.VLLM_NUM_DRAFTS + "_total")
        drafted = total(upstream, C.VLLM_NUM_DRAFT_TOKENS + "_total")
        accepted = total(upstream, C.VLLM_NUM_ACCEPTED_TOKENS + "_total")
        assert steps > 0
        assert (steps, drafted, accepted) == (
            total(metrics, C.SPEC_STEPS + "_total"),
            total(metrics, C.DRAFT_TOKENS + "_total"),
            total(metrics, C.ACCEPTED_TOKENS + "_total"),
        )
        assert 1.0 == total(metrics, C.COVERAGE_RATIO)
        assert (drafted, accepted) == (
            total(metrics, C.VLLM_LOG_DRAFT_TOKENS + "_total"),
            total(metrics, C.VLLM_LOG_ACCEPTED_TOKENS + "_total"),
        )
        served.process.send_signal(signal.SIGTERM)
        assert 0 == served.process.wait(timeout=20)
    replayed = await asyncio.create_subprocess_exec(
        *SPECWATCH, "replay", "--json", str(tmp_path / "cycles.jsonl"), stdout=subprocess.PIPE
    )
    stdout, _ = await replayed.communicate()
    assert 0 == replayed.returncode
    document = orjson.loads(stdout)

    def counts(status: dict[str, object]) -> dict[tuple[str, str, str], object]:
        slices = status["slices"]
        assert isinstance(slices, list)
        return {(s["model"], s["ctx_bucket"], s["task"]): s["since_start"] for s in slices}

    assert counts(live) == counts(document)
    assert [] == document["replay"]["bad_lines"]
    assert_status_valid(document)


def test_a_vllm_command_that_cannot_start_is_named(tmp_path: Path) -> None:
    """The bare OSError once said "No such file or directory" without saying which."""
    missing = str(tmp_path / "no-vllm")
    done = subprocess.run(
        [sys.executable, "-m", "specwatch", "serve", "--port", "0", "--admin-port", "0", "--",
         missing, "serve", "m"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert 1 == done.returncode
    assert f"No such file or directory: '{missing}'" in done.stderr


async def test_sigterm_stops_the_child_and_leaves_no_process(tmp_path: Path) -> None:
    with serve(tmp_path) as served:
        await wait_ready(served.admin)
        children = served.descendants()
        assert children
        served.process.send_signal(signal.SIGTERM)
        assert 0 == served.process.wait(timeout=20)
        _gone, alive = psutil.wait_procs(children, timeout=5)
        assert [] == alive


async def read_into(response: aiohttp.ClientResponse, into: list[bytes]) -> None:
    async for chunk in response.content.iter_any():
        into.append(chunk)


async def test_a_child_killed_mid_stream_gives_a_clean_error_and_its_exit_code(
    tmp_path: Path,
) -> None:
    with serve(tmp_path, "--step-ms", "20") as served:
        await wait_ready(served.admin)
        (child,) = [p for p in served.descendants() if "sim" in " ".join(p.cmdline())]
        body = {"prompt": "long", "max_tokens": 400, "stream": True}
        async with aiohttp.ClientSession() as session:
            async with session.post(served.proxy + "/v1/completions", json=body) as response:
                assert 200 == response.status
                first = await response.content.readany()
                assert first.startswith(b"data: ")
                child.kill()
                rest: list[bytes] = []
                with pytest.raises(aiohttp.ClientPayloadError):
                    await read_into(response, rest)
                assert b'"code": 502' in b"".join(rest)  # an error event, then a broken stream

            async def down() -> bool:  # a scrape notices
                return 0.0 == total(await scrape(served.admin + "/metrics"), C.UPSTREAM_UP)

            await eventually(down, seconds=10)
            async with session.get(served.admin + "/readyz") as response:
                assert 503 == response.status
        assert 128 + signal.SIGKILL == served.process.wait(timeout=20)


async def test_serve_wraps_the_simulator_given_vllms_speculative_config(tmp_path: Path) -> None:
    """`serve -- specwatch sim --speculative-config ...` reads like a vLLM command line: the
    simulator drafts the config's K, and the sidecar names the config."""
    spec = '{"method": "ngram", "num_speculative_tokens": 3}'
    with serve(tmp_path, "--speculative-config", spec) as served:
        await wait_ready(served.admin)
        async with aiohttp.ClientSession() as session:
            status, data = await post(
                session, served.proxy + "/v1/completions", {"prompt": "a b c", "max_tokens": 20}
            )
            assert 200 == status, data
            async with session.get(served.admin + "/status") as response:
                live = await response.json()
    assert 3 == live["config"]["num_speculative_tokens"]
    assert 3 == orjson.loads(data)["metrics"]["speculative_decoding"]["num_spec_tokens"]
