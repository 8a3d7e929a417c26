"""`specwatch proxy`: the sidecar beside a running vLLM, until a stop signal."""

from __future__ import annotations

import argparse

from specwatch.core.loop import run_command, until_signal
from specwatch.settings import Settings
from specwatch.sidecar.sidecar import Sidecar


def run(_args: argparse.Namespace, settings: Settings) -> int:
    return run_command("proxy", proxy(settings))


async def proxy(settings: Settings) -> int:
    sidecar = Sidecar(settings)
    await sidecar.start()
    try:
        await until_signal()
        await sidecar.drain(settings.serve.drain_seconds)
    finally:
        await sidecar.stop()
    return 0
