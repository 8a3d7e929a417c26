"""`specwatch serve -- <vllm command>`: vLLM started as a child with the flags specwatch needs,
proxied, and stopped together with it."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import signal
import sys

import structlog

from specwatch.core.loop import run_command, until_signal
from specwatch.engines.detect import LLAMACPP, NAMES, SGLANG
from specwatch.settings import Settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.upstream.child import VllmProcess, prepare_command
from specwatch.upstream.specconfig import (
    SPECULATIVE_FLAGS,
    flag_value,
    llamacpp_speculative,
    llamacpp_target,
    sglang_speculative,
    sglang_target,
    target_of,
)

log = structlog.get_logger("specwatch")

# the speculative config and the served model of a command in an engine's own flags
_OWN_FLAGS = {
    LLAMACPP: (llamacpp_speculative, llamacpp_target),
    SGLANG: (sglang_speculative, sglang_target),
}


def _check_ports(settings: Settings, vllm_argv: list[str]) -> None:
    """A pasted `vllm serve ... --port 8000` would take the port clients reach specwatch on
    (8000 is the default of both): vLLM, started first, would win it and specwatch would
    fail to bind, or the other way round. Said before anything starts."""
    given = flag_value(vllm_argv, ("--port",))
    if given is None or not given.isdigit():
        return
    for flag, own in (("--port", settings.port), ("--admin-port", settings.admin_port)):
        if int(given) == own:
            raise ValueError(
                f"vLLM's --port {given} is specwatch's own {flag}: drop --port from the vLLM "
                f"command (specwatch then picks a free one) or give specwatch another {flag}"
            )


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not args.vllm_argv:
        print("specwatch: serve needs a vLLM command after --", file=sys.stderr)
        return 2
    return run_command("serve", serve(settings, args.vllm_argv))


async def serve(settings: Settings, vllm_argv: list[str]) -> int:
    """Start vLLM with the flags specwatch needs, proxy it, and stop both together; the exit
    code is vLLM's (0 after a clean stop on our signal)."""
    _check_ports(settings, vllm_argv)
    command = prepare_command(vllm_argv)
    print(f"specwatch: starting {command.argv[0]}: {shlex.join(command.argv)}", file=sys.stderr)
    if command.added:
        added = shlex.join(command.added)
        print(f"specwatch: added to the {NAMES[command.engine]} command: {added}", file=sys.stderr)
    # what vLLM is told is what the sidecar reports (its own --speculative-config aside)
    speculative = flag_value(vllm_argv, SPECULATIVE_FLAGS) or settings.speculative_config
    target = target_of(vllm_argv)
    if command.engine in _OWN_FLAGS:  # an engine whose command says it in flags of its own
        read_speculative, read_target = _OWN_FLAGS[command.engine]
        found = read_speculative(vllm_argv)
        speculative = settings.speculative_config if found is None else json.dumps(found)
        target = read_target(vllm_argv)
    settings = settings.model_copy(
        update={"upstream": command.upstream, "speculative_config": speculative}
    )
    sidecar = Sidecar(settings, fresh_engine=True, target=target, engine=command.engine)
    child = VllmProcess(command, sidecar.log_line)
    await child.start()
    try:
        await sidecar.start()
    except OSError:
        await child.stop(settings.serve.drain_seconds)
        raise
    exited = asyncio.create_task(child.wait())
    stopping = asyncio.create_task(until_signal())
    done, _ = await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if exited in done:
        code = exited.result()
        stopping.cancel()
        sidecar.health.upstream_up = False
        log.error("vllm_exited", code=code, grace_seconds=settings.serve.exit_grace_seconds)
        await asyncio.sleep(settings.serve.exit_grace_seconds)  # let Prometheus see it
    else:
        number = stopping.result()
        await sidecar.drain(settings.serve.drain_seconds)  # streams finish while vLLM serves
        log.info("stopping_vllm", signal=signal.Signals(number).name)
        code = await child.stop(settings.serve.drain_seconds, number)
        if code == 128 + number:  # ended by the signal we passed on: a clean stop
            code = 0
    await sidecar.stop()
    return code
