"""Traffic for the latency SLO tests, and the count of a cycle log's lines against
objectives, the rules of docs/latency-slos.md written out again apart from the code."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

TASKS = ("code", "chat")


async def traffic(proxy: str, n: int) -> None:
    async with aiohttp.ClientSession() as session:
        for i in range(n):
            task = TASKS[i % 2]
            stream = i % 3 != 0
            body: dict[str, Any] = {
                "prompt": f"[task:{task}] request {i} " + "w " * (i % 40),
                "max_tokens": 1 if i % 17 == 0 else 16 + i % 48,
                "stream": stream,
            }
            headers = {"X-Task-Type": task} | ({"X-Sim-Fail": "500"} if i % 23 == 0 else {})
            async with session.post(proxy + "/v1/completions", json=body, headers=headers) as r:
                await r.read()


def counted_from_the_log(log: Path, objectives: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per objective, [good, SLI events] counted from the cycle log's lines, the rules of
    docs/latency-slos.md written out again here."""
    out = {o["name"]: [0, 0] for o in objectives}
    for line in log.read_text().splitlines():
        row = orjson.loads(line)
        if "request_id" not in row or row.get("outcome", "observed") != "observed":
            continue
        ttft, tpot, tokens = row["ttft_ms"], row["tpot_ms"], row["completion_tokens"]
        if ttft is None or (tpot is None and (tokens is None or tokens > 1)):
            continue  # unmeasured
        for o in objectives:
            if o.get("task") not in (None, row["task"]):
                continue
            good = ttft <= o["ttft_ms"] and (tpot is None or tpot <= o["tpot_ms"])
            out[o["name"]][0] += good
            out[o["name"]][1] += 1
    return out


def objectives_at_medians(tmp_path: Path, *logs: Path) -> tuple[list[dict[str, Any]], Path]:
    """Two objectives with thresholds at the medians the logs' requests gave (some meet them,
    some do not), `code` for that task only, and a settings file naming them."""
    rows = [orjson.loads(line) for log in logs for line in log.read_bytes().splitlines()]
    timed = [row for row in rows if row.get("ttft_ms") is not None]
    ttft = statistics.median(row["ttft_ms"] for row in timed)
    tpot = statistics.median(row["tpot_ms"] for row in timed if row["tpot_ms"] is not None)
    objectives = [
        {"name": "all", "ttft_ms": ttft, "tpot_ms": tpot, "objective": 0.99},
        {"name": "code", "task": "code", "ttft_ms": ttft * 2, "tpot_ms": tpot, "objective": 0.95},
    ]
    config = tmp_path / "slo.yml"
    config.write_text(yaml.safe_dump({"latency_slos": objectives}))
    return objectives, config
