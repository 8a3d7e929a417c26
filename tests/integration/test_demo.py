"""`specwatch demo`, the README's main job, end to end on a shortened run."""

from __future__ import annotations

import argparse
import io
import re

from rich.console import Console
from specwatch.demo import run_demo


async def test_the_demo_shows_green_yellow_and_red_slices_and_reconciles() -> None:
    out = io.StringIO()
    console = Console(file=out, width=140, force_terminal=False)
    args = argparse.Namespace(
        duration=15.0, seed=7, concurrency=16, port=0, admin_port=0, keep_running=False
    )
    assert 0 == await run_demo(args, console)
    text = out.getvalue()
    summary = re.search(r"slices by zone: (.*)", text)
    assert summary is not None
    found = re.findall(r"(green|yellow|red|insufficient) (\d+)", summary[1])
    zones = {name: int(n) for name, n in found}
    assert zones.get("green", 0) >= 1
    assert zones.get("yellow", 0) >= 1
    assert zones.get("red", 0) >= 1
    seen, counted = map(
        int, re.findall(r"(\d+) speculative steps seen by specwatch, (\d+)", text)[0]
    )
    assert seen == counted > 0
    assert "/metrics" in text
    assert "/status" in text
