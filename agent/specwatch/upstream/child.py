"""Run vLLM as a child: add the flags specwatch needs, pass its output through, stop it cleanly.

The child gets its own process group (vLLM starts engine processes of its own), so stopping it
can end every process it started: SIGTERM to vLLM, a bounded wait for it to drain, then SIGKILL
to the whole group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from specwatch.engines.detect import (
    LLAMACPP,
    LLAMACPP_FLAGS,
    SGLANG,
    SGLANG_FLAGS,
    VLLM,
    engine_of,
)

log = structlog.get_logger("specwatch.child")

REQUIRED_FLAGS: tuple[tuple[str, str | None], ...] = (
    ("--per-request-spec-decode-metrics", "detailed"),
    ("--enable-per-request-metrics", None),
)


SPECULATIVE_FLAGS = ("--speculative-config", "--speculative_config")
SPEC_ONLY_FLAGS = frozenset({"--per-request-spec-decode-metrics"})


def _has_flag(argv: Sequence[str], flag: str) -> str | None:
    """The flag's value ('' for a bare flag), or None when absent; both `--f v` and `--f=v`."""
    for i, arg in enumerate(argv):
        if arg == flag:
            nxt = argv[i + 1] if i + 1 < len(argv) else ""
            return "" if nxt.startswith("--") else nxt
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, slots=True)
class VllmCommand:
    argv: tuple[str, ...]
    added: tuple[str, ...]  # what specwatch added, to print
    upstream: str  # where the proxy reaches it
    engine: str = VLLM  # engines/detect.py


def prepare_command(argv: Sequence[str], port: int | None = None) -> VllmCommand:
    """The user's vLLM command plus what is missing: per-request metrics, loopback host, port
    (llama.cpp's server and SGLang: their /metrics, loopback host, port; TensorRT-LLM's: host
    and port; engines/detect.py)."""
    if not argv:
        raise ValueError("no vLLM command given: specwatch serve [options] -- vllm serve MODEL ...")
    added: list[str] = []
    speculative = any(_has_flag(argv, flag) is not None for flag in SPECULATIVE_FLAGS)
    engine = engine_of(argv)
    # SGLang's per-request data is asked per request, TensorRT-LLM's and its Prometheus page in
    # a config file the user writes (docs/engines.md): nothing to add but where to listen
    required = {LLAMACPP: LLAMACPP_FLAGS, SGLANG: SGLANG_FLAGS, VLLM: REQUIRED_FLAGS}.get(
        engine, ()
    )
    for flag, value in required:
        if flag in SPEC_ONLY_FLAGS and not speculative:
            continue  # vLLM 0.32 refuses to start with it when nothing is speculative
        if _has_flag(argv, flag) is None:
            added += [flag] if value is None else [flag, value]
    host = _has_flag(argv, "--host")
    if not host:
        host = "127.0.0.1"
        added += ["--host", host]
    given_port = _has_flag(argv, "--port")
    if given_port:
        chosen = int(given_port)
    else:
        chosen = port or free_port()
        added += ["--port", str(chosen)]
    connect = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return VllmCommand(
        argv=(*argv, *added),
        added=tuple(added),
        upstream=f"http://{connect}:{chosen}",
        engine=engine,
    )


class VllmProcess:
    """The running child; its stdout and stderr go to ours, line by line, and to `on_line`."""

    def __init__(
        self, command: VllmCommand, on_line: Callable[[str], None], echo: bool = True
    ) -> None:
        self.command = command
        self._on_line = on_line
        self._echo = echo  # False: lines go to `on_line` only (bench keeps its terminal)
        self._process: asyncio.subprocess.Process | None = None
        self._pump: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.command.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # its own process group: we can end all it starts
            )
        except OSError as error:  # name the program: the bare error does not
            raise type(error)(error.errno, error.strerror, self.command.argv[0]) from None
        self._pump = asyncio.create_task(self._pass_through())

    async def _pass_through(self) -> None:
        assert self._process is not None
        assert self._process.stdout is not None
        out = sys.stdout.buffer
        while True:
            try:
                line = await self._process.stdout.readline()
            except ValueError:  # a line past the stream limit: take what there is
                line = await self._process.stdout.read(1 << 16)
            if not line:
                return
            if self._echo:
                out.write(line)
                out.flush()
            try:
                self._on_line(line.decode("utf-8", errors="replace"))
            except Exception:  # a parser bug must not stop vLLM's output
                log.exception("log_line_failed")

    async def wait(self) -> int:
        """vLLM's exit code; 128 + N when a signal N ended it (the shell's convention)."""
        assert self._process is not None
        code = await self._process.wait()
        if self._pump is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._pump, timeout=5.0)
        self._kill_group()  # leave nothing behind, even when vLLM died by itself
        return 128 - code if code < 0 else code

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    async def stop(self, drain_seconds: float, sig: int = signal.SIGTERM) -> int:
        """Ask vLLM to stop, wait up to `drain_seconds`, then kill its whole process group."""
        assert self._process is not None
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(sig)
            try:
                await asyncio.wait_for(asyncio.shield(self._process.wait()), drain_seconds)
            except TimeoutError:
                log.warning("vllm_drain_timeout", seconds=drain_seconds)
        self._kill_group()
        return await self.wait()
