"""A port that cannot be had is one line naming the flag, from every command that listens; and
`serve` notices a pasted vLLM command whose --port is its own before starting anything."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def taken() -> Iterator[int]:
    """A port some other process listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def specwatch(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specwatch", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("sim", "--port", "{port}"), "--port"),
        (("demo", "--port", "{port}", "--duration", "1"), "--port"),
        (("demo", "--admin-port", "{port}", "--duration", "1"), "--admin-port"),
        (("proxy", "--port", "{port}", "--admin-port", "0"), "--port"),
        (("proxy", "--admin-port", "{port}", "--port", "0"), "--admin-port"),
    ],
)
def test_a_taken_port_is_one_line_naming_the_flag(
    taken: int, argv: tuple[str, ...], flag: str
) -> None:
    done = specwatch(*(arg.format(port=taken) for arg in argv))
    assert 1 == done.returncode
    assert [
        f"specwatch: {argv[0]}: cannot listen on 127.0.0.1:{taken} ({flag}): port {taken} is "
        f"taken by another process; give another {flag}"
    ] == done.stderr.strip().splitlines()[-1:]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("vllm_port", "own"),
    [(["--port", "8000"], "--port"), (["--port=9400"], "--admin-port")],
)
def test_serve_refuses_a_vllm_port_that_is_its_own(vllm_port: list[str], own: str) -> None:
    """`vllm` need not exist: nothing is started."""
    done = specwatch("serve", "--", "vllm-that-is-not-there", "serve", "m", *vllm_port)
    assert 1 == done.returncode
    port = vllm_port[-1].removeprefix("--port=")
    assert [
        f"specwatch: serve: vLLM's --port {port} is specwatch's own {own}: drop --port from "
        f"the vLLM command (specwatch then picks a free one) or give specwatch another {own}"
    ] == done.stderr.strip().splitlines()
