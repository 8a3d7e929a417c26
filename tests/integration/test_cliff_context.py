"""A draft-position cliff that starts inside a ctx bucket, black box through a cycle log and
`specwatch replay --json`: from 4,500 tokens of context on, draft positions 3 and 4 accept
nothing. The 4k-8k slice straddles it (about half its steps before) and its own counts show no
cliff; the steps' own positions do: the rollup and that slice name position 3 from context
4,608 (the first 256-token bin wholly past it), the 2k-4k slice nothing. The log is written by
the sidecar's own serializer (store/cyclelog.to_line)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord
from specwatch.store.cyclelog import to_line

from tests.support import assert_status_valid
from tests.support.analysis import cliff_steps

CLIFF = 4500


def request(rng: random.Random, i: int) -> RequestRecord:
    prompt = rng.randint(3000, 6000)
    spec = cliff_steps(rng, prompt, CLIFF)
    return RequestRecord(
        ts=1.8e9 + i,
        request_id=f"r{i}",
        model="m",
        task="chat",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=prompt,
        completion_tokens=sum(spec.accepted) + spec.steps,
        spec=spec,
        latency=Latency(ttft=0.05, tpot=0.01, e2e=0.5),
    )


def test_a_cliff_inside_a_bucket_is_named_where_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(11)
    log = tmp_path / "cycles.jsonl"
    log.write_bytes(b"".join(to_line(request(rng, i)) for i in range(400)))
    capsys.readouterr()
    assert 0 == main(["replay", "--json", str(log)])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert_status_valid(document)
    (model,) = document["models"]
    (cliff,) = [c for c in model["causes"] if c["kind"] == C.CauseKind.POSITION_CLIFF]
    assert (cliff["position"], cliff["context"], cliff["ctx_bucket"]) == (3, 4608, "4k-8k")
    slices = {s["ctx_bucket"]: s for s in document["slices"]}
    straddling = [c for c in slices["4k-8k"]["causes"] if c["kind"] == C.CauseKind.POSITION_CLIFF]
    assert [(3, 4608)] == [(c["position"], c["context"]) for c in straddling]
    assert not slices["2k-4k"]["causes"]
