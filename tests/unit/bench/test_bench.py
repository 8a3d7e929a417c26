"""The bench's statistics, verdict, sweep commands and workloads, without a server."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from specwatch.bench.client import Sample
from specwatch.bench.report import HELPS, HURTS, UNCLEAR, call
from specwatch.bench.results import Analysis, speedup
from specwatch.bench.sweep import SweepError, baseline_command, command_for_k, parse_ks
from specwatch.bench.workload import DatasetError, builtin, sharegpt
from specwatch.settings import TaskSettings


def paired(rng: np.random.Generator, n: int, true_ratio: float) -> tuple[list[Sample], ...]:
    """Requests of very different sizes (lognormal), the spec latency noisy around size/ratio."""
    size = rng.lognormal(0.0, 0.8, n)
    base = size * rng.gamma(20.0, 1 / 20.0, n)
    spec = size / true_ratio * rng.gamma(5.0, 1 / 5.0, n)
    out_b, out_s = [], []
    for i in range(n):
        common = {"index": i, "target": "", "ok": True, "ttft": 0.0, "output_tokens": 2}
        out_b.append(Sample(e2e=float(base[i]), **common))  # type: ignore[arg-type]
        out_s.append(Sample(e2e=float(spec[i]), **common))  # type: ignore[arg-type]
    return out_b, out_s


def test_bootstrap_interval_covers_the_true_ratio_at_its_nominal_rate() -> None:
    """Over many runs the 90% interval holds the population ratio of means ~90% of the time
    (mean base = E[size] x 1, mean spec = E[size] / r: the ratio of means is r exactly)."""
    rng = np.random.default_rng(5)
    hits = runs = 0
    for run in range(300):
        base, spec = paired(rng, 40, 1.7)
        figure = speedup(base, spec, Analysis(confidence=0.90, bootstrap=1000, seed=run))
        assert figure is not None
        e2e = figure["e2e"]
        hits += e2e["low"] <= 1.7 <= e2e["high"]
        runs += 1
    coverage = hits / runs
    assert 0.84 <= coverage <= 0.96, coverage


def test_too_few_pairs_give_an_estimate_without_interval() -> None:
    base, spec = paired(np.random.default_rng(1), 6, 2.0)
    figure = speedup(base, spec, Analysis())
    assert figure is not None
    assert 6 == figure["e2e"]["pairs"]
    assert figure["e2e"]["low"] is None
    assert UNCLEAR == call(figure["e2e"])


def test_failed_requests_leave_the_pairing() -> None:
    base, spec = paired(np.random.default_rng(2), 30, 2.0)
    spec[0].ok = False
    base[1].ok = False
    figure = speedup(base, spec, Analysis())
    assert figure is not None
    assert 28 == figure["e2e"]["pairs"]


def test_calls_use_the_whole_interval() -> None:
    assert HELPS == call({"estimate": 1.3, "low": 1.01, "high": 1.6, "pairs": 20})
    assert HURTS == call({"estimate": 0.8, "low": 0.7, "high": 0.99, "pairs": 20})
    assert UNCLEAR == call({"estimate": 1.3, "low": 0.98, "high": 1.6, "pairs": 20})
    assert UNCLEAR == call(None)


SPEC = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'


def test_sweep_commands() -> None:
    argv = ["python", "-m", "vllm.x", "--model", "m", "--speculative-config", SPEC, "--port", "1"]
    assert ["python", "-m", "vllm.x", "--model", "m", "--port", "1"] == baseline_command(argv)
    for_5 = command_for_k(argv, 5)
    assert {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4} == json.loads(
        for_5[for_5.index("--speculative-config") + 1]
    )
    assert ["--port", "1"] == for_5[-2:]
    joined = ["vllm", f"--speculative_config={SPEC}"]
    assert ["vllm"] == baseline_command(joined)
    assert 7 == json.loads(command_for_k(joined, 7)[-1])["num_speculative_tokens"]
    with pytest.raises(SweepError, match="no --speculative-config"):
        baseline_command(["vllm", "--model", "m"])
    with pytest.raises(SweepError, match="not JSON"):
        command_for_k(["vllm", "--speculative-config", "{oops"], 3)
    assert [3, 5, 7] == parse_ks("3,5,7")
    for bad in ("", "3,3", "0", "a"):
        with pytest.raises(SweepError):
            parse_ks(bad)


def test_builtin_workload_is_seeded_and_mixed() -> None:
    one = builtin(400, seed=4, max_tokens=32, max_prompt_words=3000)
    assert one == builtin(400, seed=4, max_tokens=32, max_prompt_words=3000)
    assert one != builtin(400, seed=5, max_tokens=32, max_prompt_words=3000)
    tasks = {r.task for r in one}
    assert {"code", "chat", "summarization", "translation", "reasoning"} == tasks
    words = [len(r.prompt.split()) for r in one]
    assert min(words) >= 16
    assert max(words) <= 3000
    assert sum(w > 1000 for w in words) > 40  # the long tail is there
    assert 0.35 < sum(r.chat for r in one) / 400 < 0.65


def test_sharegpt_file(tmp_path: Path) -> None:
    data = [
        {"conversations": [{"from": "human", "value": "Write a python function to sort"},
                           {"from": "gpt", "value": "def f(): ..."}]},
        {"conversations": [{"from": "gpt", "value": "no human turn"}]},
        {"conversations": [{"from": "human", "value": "Translate this into French: hello"}]},
        "junk",
    ]  # fmt: skip
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data))
    requests, skipped = sharegpt(path, 10, seed=0, max_tokens=16, tasks=TaskSettings())
    assert 2 == skipped
    assert 10 == len(requests)
    assert {"code", "translation"} == {r.task for r in requests}
    assert all(r.chat for r in requests)
    for text, message in (("[", "not JSON"), ("[]", "no conversation"), ("{}", "JSON list")):
        path.write_text(text)
        with pytest.raises(DatasetError, match=message):
            sharegpt(path, 1, seed=0, max_tokens=16, tasks=TaskSettings())
    with pytest.raises(DatasetError, match="No such file"):
        sharegpt(tmp_path / "missing.json", 1, seed=0, max_tokens=16, tasks=TaskSettings())


def test_the_built_in_mix_does_not_depend_on_global_random_state() -> None:
    random.seed(1)
    a = builtin(50, seed=9, max_tokens=8)
    random.seed(2)
    assert a == builtin(50, seed=9, max_tokens=8)


def test_a_target_without_samples_still_reports(tmp_path: Path) -> None:
    """Ctrl-C before the second target's first answer: the report is written all the same."""
    from specwatch.analysis.counting.slicing import CtxBuckets
    from specwatch.bench import report
    from specwatch.bench.results import analyse
    from specwatch.bench.runner import Target, TargetRun

    base, _ = paired(np.random.default_rng(3), 12, 2.0)
    for sample in base:
        sample.prompt_tokens = 100
    runs = [
        TargetRun(Target("baseline", "http://b"), "m", base, 3.0),
        TargetRun(Target("spec", "http://s"), "m", [], 0.0),
    ]
    documents = analyse(runs, CtxBuckets((512,)), Analysis())
    assert [12, 0] == [d["requests"] for d in documents]
    document = {
        "meta": {"command": "", "requests": 12, "workload": "w", "load_description": "l",
                 "load": {"temperature": 0.0}, "max_tokens": 2, "version": "v", "finished": "f",
                 "partial": True, "analysis": {"confidence": 0.95, "bootstrap": 10}},
        "targets": documents,
        "verdict": report.verdict(documents),
    }  # fmt: skip
    written = report.write(document, tmp_path)
    assert "Partial report" in (tmp_path / "report.md").read_text()
    assert 6 == len(written)
