"""`compare --metric tpot --json`, black box, on cycle logs whose step time grows with the
requests in flight: two equal configs at different loads are not called slower, a truly slower
one is, loads that do not overlap give `insufficient` with the reason, and `--split track`
reads stable as A and the canary as B."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from specwatch import conventions as C
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import to_line

K = 4
STEP_SECONDS = 0.004  # alone; each other request in flight adds 3% of it
PER_REQUEST_IN_FLIGHT = 0.03


def records(
    seed: int,
    n: int,
    mean_load: float,
    slower: float = 1.0,
    start: float = 1.7e9,
    alpha: float = 0.7,
) -> list[RequestRecord]:
    """`n` requests a task (chat, code) of model m: K = 4, each its own acceptance around
    `alpha` (sd 0.08), its load 1 + Poisson(mean_load - 1), its steps' time at that load times
    `slower` and a log-normal factor of its own (sd 0.15)."""
    rng = np.random.default_rng(seed)
    out = []
    shape = alpha * (1 - alpha) / 0.08**2 - 1
    for i in range(2 * n):
        own = float(np.clip(rng.beta(alpha * shape, (1 - alpha) * shape), 0.05, 0.95))
        tokens = int(rng.integers(20, 300))
        drafted: list[int] = []
        accepted: list[int] = []
        made = 1
        while made < tokens:
            got = min(K, int(rng.geometric(1 - own)) - 1)
            drafted.append(K)
            accepted.append(got)
            made += got + 1
        load = 1 + int(rng.poisson(mean_load - 1))
        step = STEP_SECONDS * (1 + PER_REQUEST_IN_FLIGHT * (load - 1)) * slower
        seconds = len(drafted) * step * float(np.exp(rng.normal(0, 0.15)))
        out.append(
            RequestRecord(
                ts=start + i,
                request_id=f"r{seed}-{i}",
                model="m",
                task=("chat", "code")[i % 2],
                outcome=C.Outcome.OBSERVED,
                prompt_tokens=100,
                completion_tokens=made,
                spec=SpecDecodeBlock(K, tuple(drafted), tuple(accepted)),
                latency=Latency(tpot=seconds / (made - 1)),
                in_flight=load,
            )
        )
    return out


def write(path: Path, rows: list[RequestRecord], track: str) -> Path:
    path.write_bytes(b"".join(to_line(row, track) for row in rows))
    return path


def compare(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "specwatch", "compare", "--json", "--quiet", "--metric", "tpot",
         "--by", "model,task", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def raw_ratio(before: list[RequestRecord], after: list[RequestRecord]) -> float:
    def tpot(rows: list[RequestRecord]) -> float:
        seconds = sum((r.latency.tpot or 0) * ((r.completion_tokens or 0) - 1) for r in rows)
        return seconds / sum((r.completion_tokens or 0) - 1 for r in rows)

    return tpot(after) / tpot(before)


def test_equal_configs_at_18_and_30_in_flight_are_not_called_slower(tmp_path: Path) -> None:
    stable, canary = records(1, 400, 18), records(2, 400, 30)
    assert raw_ratio(stable, canary) > 1.15  # what one load bucket (17-32) compared before
    document = compare(
        str(write(tmp_path / "a.jsonl", stable, "stable")),
        str(write(tmp_path / "b.jsonl", canary, "canary")),
    )
    rows = document["tpot"]["slices"] + document["tpot"]["models"]
    assert {row["verdict"] for row in rows} <= {"same", "insufficient"}
    model = document["tpot"]["models"][0]
    assert model["ratio"]["lower"] <= 1.0 <= model["ratio"]["upper"]
    assert model["load_adjustment"] < 0.9  # the canary's heavier loads taken out
    assert model["a"]["mean_load"] < model["b"]["mean_load"]


def test_a_truly_slower_canary_at_other_loads_is_slower(tmp_path: Path) -> None:
    stable, canary = records(3, 400, 18), records(4, 400, 30, slower=1.08)
    document = compare(
        str(write(tmp_path / "a.jsonl", stable, "stable")),
        str(write(tmp_path / "b.jsonl", canary, "canary")),
    )
    model = document["tpot"]["models"][0]
    assert model["verdict"] == "slower"
    assert model["ratio"]["lower"] <= 1.08 <= model["ratio"]["upper"]
    factors = model["factors"]
    assert factors["deciding"] == ["step_time"]  # each step dearer, as many tokens a step
    assert factors["said"].startswith("slower: each step costs")
    assert factors["tokens_per_step"]["lower"] <= 1.0 <= factors["tokens_per_step"]["upper"]
    ratio = factors["step_time"]["estimate"] / factors["tokens_per_step"]["estimate"]
    assert model["ratio"]["estimate"] == pytest.approx(ratio, rel=1e-9)


def test_an_acceptance_regression_is_named_as_fewer_tokens_a_step(tmp_path: Path) -> None:
    """The canary accepts 0.60 where stable accepts 0.70, its steps cost the same: slower, and
    the tokens per step decide (jundot/omlx #3742's case, split by hand there)."""
    stable, canary = records(11, 400, 12), records(12, 400, 12, alpha=0.6)
    document = compare(
        str(write(tmp_path / "a.jsonl", stable, "stable")),
        str(write(tmp_path / "b.jsonl", canary, "canary")),
    )
    model = document["tpot"]["models"][0]
    assert model["verdict"] == "slower"
    assert model["factors"]["deciding"] == ["tokens_per_step"]
    assert "fewer tokens" in model["factors"]["said"]


def test_loads_that_do_not_overlap_are_insufficient_with_the_reason(tmp_path: Path) -> None:
    document = compare(
        str(write(tmp_path / "a.jsonl", records(5, 200, 2), "stable")),
        str(write(tmp_path / "b.jsonl", records(6, 200, 40), "canary")),
    )
    model = document["tpot"]["models"][0]
    assert model["verdict"] == "insufficient"
    assert model["ratio"] is None
    assert "do not overlap" in model["reason"]


def test_split_by_track_reads_stable_as_a_and_the_canary_as_b(tmp_path: Path) -> None:
    stable, canary = records(7, 200, 8), records(8, 200, 8, slower=1.3, start=1.8e9)
    both = tmp_path / "both.jsonl"
    both.write_bytes(
        write(tmp_path / "s", stable, "stable").read_bytes()
        + write(tmp_path / "c", canary, "canary").read_bytes()
    )
    document = compare(str(both), "--split", "track")
    assert (document["a"], document["b"]) == ("stable", "canary")
    assert "stable" in document["sides"]["a"]
    assert "control" in document["sides"]["a"]
    assert document["tpot"]["models"][0]["verdict"] == "slower"  # the canary, not stable
    newer = [msgspec.structs.replace(r, config="aaa") for r in records(9, 200, 8, start=1.9e9)]
    older = [msgspec.structs.replace(r, config="zzz") for r in records(10, 200, 8, slower=1.3)]
    configs = tmp_path / "configs.jsonl"
    configs.write_bytes(b"".join(to_line(r) for r in newer + older))  # the newer one first
    document = compare(str(configs), "--split", "config")
    assert (document["a"], document["b"]) == ("zzz", "aaa")  # not alphabetical: by first seen
    assert "newer" in document["sides"]["b"]
    assert document["tpot"]["models"][0]["verdict"] == "faster"  # the newer config, B
