"""docs/status.schema.json: replay output satisfies it, and it is strict enough to matter."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from specwatch.cli.main import main

from tests.support import assert_status_valid


def cycle_log(path: Path) -> Path:
    lines = []
    for i in range(40):
        lines.append({"v": 1, "ts": 1000.0 + i, "request_id": f"s{i}", "model": "m",
                      "task": "code", "prompt_tokens": 30, "completion_tokens": 20,
                      "num_spec_tokens": 3, "per_step_drafted": [3] * 6,
                      "per_step_accepted": [3, 1, 0, 2, 3, 1], "ttft_ms": 5.0, "tpot_ms": 2.0,
                      "e2e_ms": 50.0, "variant": "spec"})  # fmt: skip
        baseline = {"v": 1, "ts": 1000.5 + i, "request_id": f"b{i}", "model": "m",
                    "task": "code", "prompt_tokens": 30, "completion_tokens": 20, "tpot_ms": 4.0,
                    "ttft_ms": 5.0, "e2e_ms": 80.0, "variant": "baseline"}  # fmt: skip
        lines.append(baseline)
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\nnot json\n")
    return path


def replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    assert 0 == main(["replay", "--json", str(cycle_log(tmp_path / "cycles.jsonl"))])
    return orjson.loads(capsys.readouterr().out)


def test_replay_output_satisfies_the_schema_baseline_records_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = replayed(tmp_path, capsys)
    assert_status_valid(document)
    (model,) = document["models"]
    assert "measured" == model["gain"]["method"]  # the baseline records made it measured
    assert 1 == len(document["replay"]["bad_lines"])


@pytest.mark.parametrize(
    "break_it",
    [
        lambda d: d["models"][0].update(zone="purple"),
        lambda d: d["models"][0].update(surprise=1),
        lambda d: d["models"][0]["alpha"].pop("lower"),
        lambda d: d.update(requests_by_outcome={"lost": 1}),
        lambda d: d["models"][0].update(trials=-1),
    ],
)
def test_the_schema_rejects_what_the_contract_does_not_allow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], break_it: Any
) -> None:
    document = copy.deepcopy(replayed(tmp_path, capsys))
    break_it(document)
    with pytest.raises(jsonschema.ValidationError):
        assert_status_valid(document)
