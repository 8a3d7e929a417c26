"""specwatch serve in front of a real llama.cpp server (built from source, tools/build_llamacpp.sh)
on the tiny models converted to GGUF: prompt-lookup speculation (`--spec-type ngram-simple`) on
prompts it can copy (green), and the noisy draft model (`--spec-type draft-simple`, red).

llama.cpp sends totals per request (`timings.draft_n`, `draft_n_accepted`), no steps: specwatch
judges the rate and says so (`zone_metric`), shows no alpha-hat and no tau, and its totals equal
llama.cpp's own `/metrics` counters exactly (coverage 1).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C

from tests.support import assert_status_valid
from tests.support.http import eventually, get_json, scrape, total
from tests.support.llamacpp import LLAMA_SERVER, llama_server_command, to_gguf
from tests.support.vllm import (
    Request,
    Served,
    TinyModels,
    by_slice,
    chat_requests,
    copyable,
    send_all,
    specwatch_serve,
    until_equal,
    wait_ready,
)

# one group with the vLLM tests: a second engine server beside vLLM on two cores would starve
# both (and tests/conftest.py holds every grouped test to that one group)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("vllm")]

NGRAM = (
    "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2",
    "--spec-ngram-simple-size-m", "4", "--spec-draft-n-max", "4",
)  # fmt: skip
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def gguf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not LLAMA_SERVER.exists():
        message = f"llama.cpp's server is not built at {LLAMA_SERVER} (make llamacpp)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return tmp_path_factory.mktemp("gguf")


@pytest.fixture(scope="module")
def gguf(vllm_python: Path, tiny_models: TinyModels, gguf_dir: Path) -> Path:
    return to_gguf(vllm_python, tiny_models.target, gguf_dir / "tiny.gguf")


@pytest.fixture(scope="module")
def draft_gguf(vllm_python: Path, tiny_models: TinyModels, gguf_dir: Path) -> Path:
    return to_gguf(vllm_python, tiny_models.draft, gguf_dir / "draft.gguf")


def workload(cycles: list[list[int]]) -> list[Request]:
    prompts = [("copyable", copyable(cycles, i, (30, 100, 200)[i % 3]), i) for i in range(32)]
    requests = []
    for task, prompt, i in prompts:
        body: dict[str, Any] = {"model": "tiny", "prompt": prompt, "max_tokens": MAX_TOKENS,
                                "temperature": 0}  # fmt: skip
        if i % 2:
            body["stream"] = True
        requests.append(("/v1/completions", body, {"X-Task-Type": task}))
    return requests + chat_requests(4, MAX_TOKENS)


async def reconciled(served: Served, sent: int) -> tuple[float, float]:
    """Wait until specwatch's totals equal llama.cpp's own counters and coverage is 1; return
    llama.cpp's (drafted, accepted)."""

    async def counts() -> dict[str, Any]:
        ours = await scrape(served.admin + "/metrics")
        engine = await scrape(served.proxy + "/metrics")  # llama.cpp's page, proxied
        return {
            "requests": total(ours, C.REQUESTS + "_total", outcome=C.Outcome.OBSERVED),
            "ours": (
                total(ours, C.DRAFT_TOKENS + "_total"),
                total(ours, C.ACCEPTED_TOKENS + "_total"),
            ),
            "llamacpp": (
                total(engine, C.LLAMACPP_NUM_DRAFT_TOKENS + "_total"),
                total(engine, C.LLAMACPP_NUM_ACCEPTED_TOKENS + "_total"),
            ),
            "coverage": total(ours, C.COVERAGE_RATIO),
        }

    first = await counts()
    expected = {**first, "requests": sent, "ours": first["llamacpp"], "coverage": 1.0}
    final = await until_equal(counts, expected)
    print(f"\nreconciliation: {final}")
    assert expected == final
    drafted, accepted = final["llamacpp"]
    return drafted, accepted


def copy_slices(live: dict[str, Any]) -> list[dict[str, Any]]:
    """The copyable slices that drafted."""
    return [
        s for (_, task), s in by_slice(live).items() if task == "copyable" and s["draft_tokens"]
    ]


def busiest_copy(live: dict[str, Any]) -> dict[str, Any] | None:
    """The copyable slice that drafted the most (None before one drafted)."""
    return max(copy_slices(live), key=lambda s: s["draft_tokens"], default=None)


async def judged_status(served: Served, busiest: bool = False) -> dict[str, Any]:
    """/status once every model has a zone, and with `busiest` the busiest copyable slice
    too: a model's rollup passes its gates before its slices do, and the evaluation that
    judged it may have come before the last requests (under load it did)."""

    async def status() -> dict[str, Any]:
        document: dict[str, Any] = await get_json(served.admin + "/status")
        return document

    async def judged() -> bool:
        live = await status()
        waited = [*live["models"], *([busiest_copy(live) or {}] if busiest else [])]
        return all(s.get("zone", C.Zone.INSUFFICIENT) != C.Zone.INSUFFICIENT for s in waited)

    await eventually(judged, seconds=15)
    live = await status()
    assert_status_valid(live)
    return live


def the_rate_alone(model: dict[str, Any], drafted: float, accepted: float) -> None:
    """Totals: the rate, exactly llama.cpp's; no alpha-hat, no tau, the zone on the rate."""
    assert model["model"] == "tiny"
    assert (model["draft_tokens"], model["accepted_tokens"]) == (drafted, accepted)
    assert model["spec_steps"] == 0
    assert model["zone_metric"] == "rate"
    assert model["alpha"] is None
    assert model["tau"] is None
    assert model["rate"] == pytest.approx(accepted / drafted)


async def test_ngram_totals_reconcile_and_zones_judge_the_rate(
    gguf: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    with specwatch_serve(tmp_path, llama_server_command(gguf, *NGRAM)) as served:
        ready = await wait_ready(served)
        print(f"\nllama.cpp ready through specwatch serve in {ready:.1f} s")
        requests = workload(tiny_models.cycles)
        await send_all(served, requests, concurrency=2)
        drafted, accepted = await reconciled(served, len(requests))
        assert drafted > 200
        live = await judged_status(served, busiest=True)
    (model,) = live["models"]
    the_rate_alone(model, drafted, accepted)
    assert live["config"]["engine"] == "llamacpp"
    assert live["config"]["engine_version"].startswith("b11434")
    assert live["config"]["method"] == "ngram-simple"
    assert live["config"]["num_speculative_tokens"] == 4
    supports = {"alpha_hat": False, "rate": True, "tau": False, "per_position": False}
    assert {"data": "totals", "supports": supports}.items() <= live["per_request_data"][
        "tiny"
    ].items()
    copy = copy_slices(live)
    assert min(s["rate"] for s in copy) > 0.9
    assert {s["zone_metric"] for s in copy} == {"rate"}
    busiest = busiest_copy(live)
    assert busiest is not None
    assert busiest["zone"] == C.Zone.GREEN, busiest


async def test_a_noisy_draft_model_is_red_on_the_rate(
    gguf: Path, draft_gguf: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    draft = ("--spec-type", "draft-simple", "-md", str(draft_gguf), "--spec-draft-n-max", "3")
    with specwatch_serve(tmp_path, llama_server_command(gguf, *draft)) as served:
        await wait_ready(served)
        requests = workload(tiny_models.cycles)
        await send_all(served, requests, concurrency=2)
        drafted, accepted = await reconciled(served, len(requests))
        live = await judged_status(served)
    (model,) = live["models"]
    the_rate_alone(model, drafted, accepted)
    assert live["config"]["method"] == "draft-simple"
    assert live["config"]["draft"] == str(draft_gguf)
    assert model["rate"] < 0.5
    assert model["zone"] == C.Zone.RED, model
