"""`specwatch bench` as a user runs it (a subprocess) against two simulators: one without
speculation, one with K = 4. The simulators' configured acceptance and cost give the true
speedup of every slice; the report's intervals must contain it."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import statistics
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import matplotlib.image
import orjson
import pytest
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.bench.workload import builtin
from specwatch.sim.acceptance import CostModel, plan_steps
from specwatch.sim.requests import count_prompt_tokens
from specwatch.sim.server import SimConfig, SimServer

from tests.support.http import serve

K = 4
COST = CostModel(target_step_ms=20.0, draft_cost_ratio=0.05, prefill_ms_per_token=0.005)
N, MAX_TOKENS, SEED, MAX_WORDS = 150, 48, 3, 1500
BUCKETS = (512,)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[SimServer, str, SimServer, str]]:
    base_sim = SimServer(SimConfig(num_spec_tokens=0, cost=COST, seed=1))
    spec_sim = SimServer(SimConfig(num_spec_tokens=K, cost=COST, seed=1))
    base_runner, base_url = await serve(base_sim.app())
    spec_runner, spec_url = await serve(spec_sim.app())
    yield base_sim, base_url, spec_sim, spec_url
    await base_runner.cleanup()
    await spec_runner.cleanup()


async def bench(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "specwatch", "bench", "--no-progress", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode()


async def bench_pair(base: SimServer, spec: SimServer, *args: str) -> tuple[int, str]:
    """`specwatch bench --baseline --spec` against the two simulators, served for the run."""
    base_runner, base_url = await serve(base.app())
    spec_runner, spec_url = await serve(spec.app())
    try:
        return await bench("--baseline", base_url, "--spec", spec_url, *args)
    finally:
        await base_runner.cleanup()
        await spec_runner.cleanup()


def true_speedups(spec_sim: SimServer) -> dict[tuple[str, str], dict[str, float]]:
    """Expected end-to-end and per-token speedup per slice, from the simulators' configuration:
    the same requests, each request's expected number of steps by Monte Carlo."""
    buckets = CtxBuckets(BUCKETS)
    rng = random.Random(99)
    sums: dict[tuple[str, str], list[float]] = {}
    step_spec = COST.step_seconds(K)
    for request in builtin(N, seed=SEED, max_tokens=MAX_TOKENS, max_prompt_words=MAX_WORDS):
        body = request.body("m", 0.0, None)
        prompt = count_prompt_tokens(body)
        reps = 200
        steps = (
            sum(
                len(plan_steps(rng, spec_sim.acceptance, K, request.task, prompt, MAX_TOKENS, 0.0))
                for _ in range(reps)
            )
            / reps
        )
        base_decode = (MAX_TOKENS - 1) * COST.step_seconds(0)
        spec_decode = steps * step_spec
        prefill = COST.prefill_seconds(prompt)
        ctx = buckets.label(prompt)
        for key in ((ctx, request.task), (ctx, "all"), ("all", request.task), ("all", "all")):
            acc = sums.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            acc[0] += prefill + base_decode
            acc[1] += prefill + spec_decode
            acc[2] += base_decode
            acc[3] += spec_decode
    return {key: {"e2e": v[0] / v[1], "tpot": v[2] / v[3]} for key, v in sums.items()}


# The end-to-end times are the machine's wall clock: beside a vLLM test on the other core one
# slice's whole interval fell below its true speedup (2.24 [1.87, 2.73] against 2.77, CI on
# 04b0c13). On the vLLM tests' worker it never runs beside one.
@pytest.mark.xdist_group("vllm")
async def test_bench_intervals_contain_the_true_speedup_of_every_slice(
    pair: tuple[SimServer, str, SimServer, str], tmp_path: Path
) -> None:
    _, base_url, spec_sim, spec_url = pair
    out = tmp_path / "report"
    slices = len(true_speedups(spec_sim))
    # Simultaneous intervals: Bonferroni over every slice and both speedups, overall 95%.
    confidence = 1.0 - 0.05 / (2 * slices)
    code, text = await bench(
        "--baseline", base_url, "--spec", spec_url, "--requests", str(N),
        "--max-tokens", str(MAX_TOKENS), "--seed", str(SEED), "--max-prompt-words",
        str(MAX_WORDS), "--ctx-buckets", ",".join(map(str, BUCKETS)), "--concurrency", "16",
        "--confidence", f"{confidence:.5f}", "--bootstrap", "4000", "--out", str(out),
    )  # fmt: skip
    assert 0 == code, text
    names = {p.name for p in out.iterdir()}
    pngs = {"latency_vs_context.png", "acceptance_vs_context.png", "per_position.png",
            "speedup_vs_k.png"}  # fmt: skip
    assert {"report.md", "results.json"} | pngs <= names
    for png in pngs:
        image = matplotlib.image.imread(out / png)  # a decodable PNG with pixels in it
        assert image.shape[0] > 100
        assert image.shape[1] > 100
        assert image.std() > 0.01
    results: dict[str, Any] = orjson.loads((out / "results.json").read_bytes())
    baseline, spec = results["targets"]
    assert ("baseline", 0, N, 0) == (
        baseline["name"],
        baseline["k"],
        baseline["ok"],
        baseline["failed"],
    )
    assert ("spec", K, N) == (spec["name"], spec["k"], spec["ok"])
    truth = true_speedups(spec_sim)
    checked = 0
    widths: list[float] = []
    for row in spec["slices"]:
        key = (row["ctx_bucket"], row["task"])
        for kind in ("e2e", "tpot"):
            measured = row["speedup"][kind] if row["speedup"] else None
            if measured is None:
                continue
            true = truth[key][kind]
            if measured["low"] is None:  # too few requests for an interval: none is given
                assert measured["pairs"] < 10
                continue
            assert measured["low"] <= true <= measured["high"], (key, kind, true, measured)
            checked += 1
            if key == ("all", "all"):
                assert measured["high"] / measured["low"] < 1.4, (kind, measured)
            elif measured["pairs"] >= 30:
                widths.append(measured["high"] / measured["low"])
    assert checked >= 20
    # Informative where there are requests enough (a few pairs, at this Bonferroni level, give a
    # wide interval): the typical slice of 30 pairs or more under 1.7x (measured 1.3-1.6). The
    # median, not every slice: end-to-end times carry the machine's own stalls, and on a loaded
    # CI host one slice of 38 pairs measured 0.90-2.04 while its neighbours stayed near 1.4x.
    assert len(widths) >= 7
    assert statistics.median(widths) < 1.7, sorted(widths)
    # The slices differ for real, and the report tells them apart: code beats translation.
    overall = {r["task"]: r for r in spec["slices"] if r["ctx_bucket"] == "all"}
    code_speed = overall["code"]["speedup"]["e2e"]
    translation_speed = overall["translation"]["speedup"]["e2e"]
    assert code_speed["low"] > translation_speed["high"]
    report = (out / "report.md").read_text()
    assert "## Verdict" in report
    assert "faster than the baseline" in report
    assert "helps" == results["verdict"]["targets"][0]["overall"]


def finished(sim: SimServer) -> float:
    labels = {**sim.metrics.labels(), "finished_reason": "length"}
    return sim.metrics.registry.get_sample_value("vllm:request_success_total", labels) or 0.0


async def test_ctrl_c_writes_a_partial_report(
    pair: tuple[SimServer, str, SimServer, str], tmp_path: Path
) -> None:
    base, base_url, spec, spec_url = pair
    out = tmp_path / "partial"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "specwatch", "bench", "--no-progress", "--baseline", base_url,
        "--spec", spec_url, "--requests", "5000", "--max-tokens", "32", "--concurrency", "8",
        "--out", str(out), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    # Interrupt once measured requests have been answered by both (the warm-up is 8 each):
    # how long the start takes depends on the machine, so poll rather than sleep.
    deadline = asyncio.get_running_loop().time() + 60
    while min(finished(base), finished(spec)) < 20:
        assert asyncio.get_running_loop().time() < deadline, "the bench never got going"
        await asyncio.sleep(0.1)
    process.send_signal(signal.SIGINT)
    text, _ = await asyncio.wait_for(process.communicate(), 60)
    assert 130 == process.returncode, text.decode()
    results = orjson.loads((out / "results.json").read_bytes())
    assert results["meta"]["partial"] is True
    done = sum(t["requests"] for t in results["targets"])
    assert 0 < done < 10_000
    assert "Partial report" in (out / "report.md").read_text()


async def test_bad_usage_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    cases = [
        (["--baseline", "http://x"], "--baseline and --spec go together"),
        (["--url", "http://x", "--sweep-k", "3"], "exactly one of"),
        (["--url", "http://x", "--dataset", str(bad)], "expected a JSON list"),
        (["--sweep-k", "3,x", "--", "vllm"], "whole numbers"),
        (["--sweep-k", "3", "--", "python", "-m", "vllm"], "no --speculative-config"),
    ]
    for args, message in cases:
        code, text = await bench(*args)
        assert 2 == code, (args, text)
        assert message in text, (args, text)
        assert "Traceback" not in text


@pytest.mark.skipif(os.name != "posix", reason="signals")
async def test_a_dead_endpoint_is_reported_not_crashed(tmp_path: Path) -> None:
    code, text = await bench("--url", "http://127.0.0.1:9", "--requests", "3", "--out",
                             str(tmp_path / "r"))  # fmt: skip
    assert 1 == code, text
    assert "Traceback" not in text


@pytest.mark.parametrize("corrupt", [0.0, 0.25])
async def test_losslessness_checks_and_cost(corrupt: float, tmp_path: Path) -> None:
    """A lossless speculative simulator gives the baseline's output token for token; one that
    changes a token in a quarter of its answers is flagged as a server bug, with examples."""
    cost = CostModel(target_step_ms=3.0)
    base = SimServer(SimConfig(num_spec_tokens=0, cost=cost))
    spec = SimServer(SimConfig(num_spec_tokens=K, cost=cost, corrupt_share=corrupt))
    out = tmp_path / "q"
    code, text = await bench_pair(
        base, spec, "--requests", "80", "--max-tokens", "24", "--concurrency", "8",
        "--quality-temperature", "0.7", "--quality-prompts", "5", "--quality-samples", "4",
        "--quality-permutations", "199", "--price-per-hour", "2.0", "--out", str(out),
    )  # fmt: skip
    assert 0 == code, text
    results = orjson.loads((out / "results.json").read_bytes())
    (check,) = results["quality"]
    greedy = check["greedy"]
    assert ("token ids", 80) == (greedy["by"], greedy["compared"])
    report = (out / "report.md").read_text()
    if corrupt:
        assert greedy["flagged"] is True
        assert 0.6 < greedy["share"] < 0.9  # about 1 - 0.25
        assert greedy["examples"]
        assert "correctness problem of the server" in report
    else:
        assert (True, 1.0) == (not greedy["flagged"], greedy["share"])
        assert "identical to the baseline's for all 80 requests" in report
    dist = check["distribution"]
    assert (5, 4, 0.7) == (dist["prompts"], dist["samples_per_side"], dist["temperature"])
    assert 0 < dist["p_value"] <= 1
    if not corrupt:  # the same distribution on both sides: nothing to flag
        assert (False, True) == (dist["flagged"], dist["p_value"] > dist["alpha"])
    base_cost, spec_cost = results["cost"]
    assert ("baseline", "spec") == (base_cost["target"], spec_cost["target"])
    expected = 2.0 / (spec_cost["output_tokens_per_s"] * 3600) * 1e6
    assert expected == pytest.approx(spec_cost["cost_per_million_output_tokens"])
    # The saving follows from the two measured throughputs; its sign is a wall-clock outcome
    # (a busy CI worker can slow either side), so the test checks the formula, not the sign.
    assert 0.0 == base_cost["saving_vs_baseline"]
    ratio = base_cost["output_tokens_per_s"] / spec_cost["output_tokens_per_s"]
    assert 1.0 - ratio == pytest.approx(spec_cost["saving_vs_baseline"])
    assert "## Cost" in report


async def test_one_endpoint_with_a_dataset_at_a_poisson_rate(
    pair: tuple[SimServer, str, SimServer, str], tmp_path: Path
) -> None:
    """`--url` (figures, no comparison), a ShareGPT file, Poisson arrivals."""
    _, _, _, spec_url = pair
    dataset = tmp_path / "sharegpt.json"
    conversations = [
        {"conversations": [{"from": "human", "value": f"Write a python function number {i}"},
                           {"from": "gpt", "value": "def f(): ..."}]}
        for i in range(30)
    ]  # fmt: skip
    dataset.write_bytes(orjson.dumps(conversations))
    out = tmp_path / "one"
    code, text = await bench(
        "--url", spec_url, "--dataset", str(dataset), "--requests", "40", "--rate", "40",
        "--max-tokens", "16", "--out", str(out),
    )  # fmt: skip
    assert 0 == code, text
    results = orjson.loads((out / "results.json").read_bytes())
    (target,) = results["targets"]
    assert ("target", 40, K) == (target["name"], target["ok"], target["k"])
    assert {"code"} == {r["task"] for r in target["slices"]} - {"all"}
    assert "Poisson arrivals at 40 req/s" in results["meta"]["load_description"]
    assert [] == results["quality"]
    assert "One target, no baseline" in (out / "report.md").read_text()


async def test_a_concurrency_sweep_gives_the_surface_its_heatmap_and_a_table(
    tmp_path: Path,
) -> None:
    """--sweep-concurrency: each target at each level, every (level, target) cell in
    results.json with a paired interval, the heatmap, and a recommended table that starts at
    1, has no gap, ends at the largest level and follows from the cells. Which way the cells
    go is a wall-clock outcome (the simulators' batch cost makes speculation slower at 8), so
    the test checks the table against the cells, not against a sign."""
    cost = CostModel(target_step_ms=6.0, batch_compute=0.1)
    base = SimServer(SimConfig(num_spec_tokens=0, cost=cost, seed=2))
    spec = SimServer(SimConfig(num_spec_tokens=K, cost=cost, seed=2))
    out = tmp_path / "sweep"
    code, text = await bench_pair(
        base, spec, "--requests", "32", "--max-tokens", "24", "--max-prompt-words", "200",
        "--sweep-concurrency", "8,1", "--bootstrap", "200", "--out", str(out),
    )  # fmt: skip
    assert 0 == code, text
    results = orjson.loads((out / "results.json").read_bytes())
    sweep = results["sweep"]
    assert [1, 8] == sweep["concurrency"]
    cells = {(c["concurrency"], c["target"]): c for c in sweep["surface"]}
    assert {(1, "spec"), (8, "spec")} == set(cells)
    for cell in cells.values():
        e2e = cell["e2e"]
        assert (K, 32) == (cell["k"], e2e["pairs"])
        assert e2e["low"] <= e2e["estimate"] <= e2e["high"]
    expected = [K if cells[(c, "spec")]["e2e"]["estimate"] >= 1 else 0 for c in (1, 8)]
    table = sweep["recommended"]["num_speculative_tokens_per_batch_size"]
    assert [1, 8] == [table[0][0], table[-1][1]]
    assert expected == [row["k"] for row in sweep["recommended"]["ranges"]]
    assert results["meta"]["requests"] == 32
    assert matplotlib.image.imread(out / "speedup_surface.png").shape[0] > 100
    report = (out / "report.md").read_text()
    assert "## Speedup by concurrency and K" in report
    assert f'"num_speculative_tokens_per_batch_size": {table}' in report
