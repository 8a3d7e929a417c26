"""Speculation off for most requests, or for all of them, black box through a cycle log and
`specwatch replay --json`: the model that drafts for 5% of its requests and the one that never
drafts are both `not_drafting` on their rollups (docs/causes.md); the model that drafts is not.
The log is written by the sidecar's own serializer (store/cyclelog.to_line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import to_line

from tests.support import assert_status_valid


def request(i: int, model: str, drafts: bool) -> RequestRecord:
    steps = 16 if drafts else 0
    return RequestRecord(
        ts=1.8e9 + i,
        request_id=f"{model}-{i}",
        model=model,
        task="chat" if i % 3 else "code",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=300,
        completion_tokens=40,
        spec=SpecDecodeBlock(3, (3,) * steps, (1,) * steps),
        latency=Latency(ttft=0.05, tpot=0.01, e2e=0.5),
    )


def test_most_requests_or_all_not_drafting_is_named_on_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "cycles.jsonl"
    with log.open("wb") as out:
        for i in range(60):
            out.write(to_line(request(i, "gated", drafts=i % 20 == 0)))  # 3 of 60 draft
            out.write(to_line(request(i, "dark", drafts=False)))
            out.write(to_line(request(i, "fine", drafts=True)))
    capsys.readouterr()
    assert 0 == main(["replay", "--json", str(log)])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert_status_valid(document)
    causes = {view["model"]: {c["kind"]: c for c in view["causes"]} for view in document["models"]}
    assert {"gated", "dark", "fine"} == set(causes)
    gated = causes["gated"][C.CauseKind.NOT_DRAFTING]
    assert gated["share"] == pytest.approx(57 / 60)
    assert gated["drafted"] > 0.01 * gated["output_tokens"]  # the pooled share misses it
    assert set(gated["tasks"]) == {"chat", "code"}
    assert causes["dark"][C.CauseKind.NOT_DRAFTING]["share"] == 1.0
    assert C.CauseKind.NOT_DRAFTING not in causes["fine"]
    assert not [s for s in document["slices"] if s["model"] == "dark"]  # no step: no slice
