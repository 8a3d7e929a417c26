from __future__ import annotations

import json
from pathlib import Path

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import to_line


def test_advise_reads_cycle_logs_and_recommends_a_shorter_draft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "cycles.jsonl"
    with log.open("wb") as handle:
        for i in range(80):  # past the gate: 30 requests, 1000 trials
            # K = 5, but positions after the first are almost never accepted
            accepted = (1, 0, 1, 2, 1, 0, 1, 1)
            record = RequestRecord(
                ts=float(i), request_id=str(i), model="m", task="code",
                outcome=C.Outcome.OBSERVED, prompt_tokens=100, completion_tokens=30,
                spec=SpecDecodeBlock(5, (5,) * len(accepted), accepted), latency=Latency(),
            )  # fmt: skip
            handle.write(to_line(record))
        handle.write(b"{broken\n")
    assert 0 == main(["advise", "--cycle-log", str(log), "--cost-ratio", "0.1", "--json"])
    captured = capsys.readouterr()
    advice = {(a["ctx_bucket"], a["task"]): a for a in json.loads(captured.out)["slices"]}
    model = advice["all", "all"]
    assert (5, 1) == (model["current_k"], model["best_k"])
    assert "lower num_speculative_tokens from 5 to 1" == model["note"]
    assert "cycles.jsonl:81" in captured.err  # the bad line is reported, not fatal
