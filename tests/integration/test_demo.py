"""`specwatch demo`, the README's main job, end to end on a shortened run."""

from __future__ import annotations

import argparse
import io
import re

from rich.console import Console
from specwatch.commands.demo import demo, demo_settings

# The drift check needs the demo's traffic in real time, and its buckets hold a few requests
# each. Under three CPU-bound processes on two cores (6 seeds, 40-s runs), the summarization
# CUSUM peaked at 11-19 against the demo's threshold of 7.4, every other slice at most 7.7
# (once) and otherwise below 5.6: the run is 40 s, 20 s after the drop. Its power is still not
# 1: one CI run in many peaked below 7.4 in every summarization slice (while the model's
# rollup alarmed). A miss is retried once on the next seed; a broken detector misses both.
SEEDS = (7, 8)


async def _demo(seed: int, engine: str = "vllm", duration: float = 40.0) -> str:
    out = io.StringIO()
    console = Console(file=out, width=140, force_terminal=False)
    args = argparse.Namespace(
        duration=duration, seed=seed, concurrency=16, port=0, admin_port=0, keep_running=False,
        engine=engine,
    )  # fmt: skip
    assert 0 == await demo(args, demo_settings(0, 0), console)
    return out.getvalue()


def _alarmed(text: str) -> list[str]:
    drift = re.search(r"drift alarms raised: (.*?) \(", text.replace("\n", " "))
    assert drift is not None, text
    return [item.split(" at ")[0] for item in drift[1].split(", ") if item != "none"]


async def test_the_demo_shows_zones_reconciles_and_catches_the_scheduled_drift() -> None:
    for seed in SEEDS:
        text = await _demo(seed)
        summary = re.search(r"slices by zone: (.*)", text)
        assert summary is not None
        found = re.findall(r"(green|yellow|red|insufficient) (\d+)", summary[1])
        zones = {name: int(n) for name, n in found}
        assert all(zones.get(zone, 0) >= 1 for zone in ("green", "yellow", "red")), text
        seen, counted = map(
            int, re.findall(r"(\d+) speculative steps seen by specwatch, (\d+)", text)[0]
        )
        assert seen == counted > 0
        assert "/metrics" in text
        assert "/status" in text
        alarmed = _alarmed(text)
        # hardly another slice: a 12-s baseline estimates a slice's noise roughly (its false
        # alarms run above the target: analysis/drift/detector.py, predictive); a detector alarming
        # on noise would raise many
        assert len([task for task in alarmed if task != "summarization"]) <= 1, alarmed
        if "summarization" in alarmed:  # the right slice
            return
    raise AssertionError(f"the summarization drop was missed on seeds {SEEDS}:\n{text}")


async def test_the_demo_on_llamacpp_shows_the_rate_and_reconciles_draft_tokens() -> None:
    """Totals only: no alpha-hat in the table, the rate in every row, draft tokens reconciled."""
    text = await _demo(7, engine="llamacpp", duration=6.0)
    seen, counted = map(int, re.findall(r"(\d+) draft tokens seen by specwatch, (\d+)", text)[0])
    assert seen == counted > 0
    rollup = re.search(r"│\s*all\s*│\s*all\s*│(.*)", text)
    assert rollup is not None, text
    requests, trials, alpha, rate, tau, _zone = (cell.strip() for cell in rollup[1].split("│")[:6])
    assert int(requests) > 0
    assert (trials, alpha, tau) == ("0", "-", "-")
    assert 0.0 < float(rate) < 1.0
