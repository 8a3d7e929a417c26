"""replay(): the live analysis on a log's own clock, and the process left as it was found."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from msgspec.structs import replace
from specwatch.analysis import replay as replay_module
from specwatch.analysis.replay import SpanTooLong, replay
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings
from specwatch.store.cyclelog import to_line


def records(n: int) -> list[RequestRecord]:
    """n requests of 4 steps at K = 3, given newest first."""
    block = SpecDecodeBlock(3, (3,) * 4, (2, 3, 0, 1))
    latency = Latency(ttft=None, tpot=None, e2e=None)
    return [
        RequestRecord(
            ts=float(n - i),
            request_id=str(i),
            model="m",
            task="code",
            outcome="observed",
            prompt_tokens=100,
            completion_tokens=12,
            spec=block,
            latency=latency,
        )
        for i in range(n)
    ]


def test_replay_leaves_the_garbage_collector_as_it_found_it() -> None:
    """It turns the collector off while reading and freezes the records for the analysis: a
    caller that lives on (a test, a command run in-process) gets it back enabled, with
    nothing frozen; one that had it off keeps it off."""
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    analyzer, end = replay(records(50), load_settings())
    assert gc.isenabled()
    assert frozen == gc.get_freeze_count()
    assert 50.0 == end  # in time order, whatever the order given
    gc.disable()
    try:
        replay(records(5), load_settings())
        assert not gc.isenabled()
        assert frozen == gc.get_freeze_count()
    finally:
        gc.enable()
    (view,) = [v for v in analyzer.snapshot(end).rollups if v.key.model == "m"]
    assert 50 * 4 == view.since_start.steps


def test_a_log_spanning_years_is_refused_naming_its_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One zero timestamp among this year's would have the replay evaluate through 56 years
    of log time (days of CPU): refused at once, the culprit named."""
    now = [replace(record, ts=1_764_400_000.0 + record.ts) for record in records(3)]
    wrong = replace(now[0], request_id="zero", ts=0.0)
    path = tmp_path / "cycles.jsonl"
    path.write_bytes(b"".join(to_line(record) for record in [*now, wrong]))
    assert 1 == main(["replay", "--json", str(path)])
    assert "'zero' at ts 0.0" in capsys.readouterr().err


def test_a_timestamp_that_is_not_seconds_is_a_bad_line_and_the_rest_is_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Milliseconds, or a number near a double's range (which once hung the replay: ts + 10 s
    is ts there, so its evaluation clock never moved), among good lines: each named as a bad
    line, the others replayed."""
    good = records(3)
    odd = [replace(good[0], ts=ts) for ts in (1_764_400_000_000.0, 1e308)]
    path = tmp_path / "cycles.jsonl"
    path.write_bytes(b"".join(to_line(record) for record in [*good, *odd]))
    assert 0 == main(["replay", "--json", str(path)])
    out, err = capsys.readouterr()
    assert f"{path}:4: ts 1764400000000.0 is not unix seconds in 1970-9999 (milliseconds?)" in err
    assert f"{path}:5: ts 1e+308 is not unix seconds in 1970-9999" in err
    assert "2 bad line(s) skipped" in err
    (only,) = json.loads(out)["slices"]
    assert (3, 3 * 4) == (only["requests"], only["spec_steps"])


def test_the_span_limit_is_a_number_of_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    """MAX_EVALUATIONS evaluations are replayed, one more is refused (a smaller limit here,
    so that the evaluations run)."""
    monkeypatch.setattr(replay_module, "MAX_EVALUATIONS", 100)
    settings = load_settings()
    interval = settings.zones.evaluation_interval_seconds
    first = records(1)[0]
    last = replace(first, ts=first.ts + 100 * interval)
    _, end = replay([first, last], settings)
    assert end == last.ts
    with pytest.raises(SpanTooLong, match="more than 100 evaluations"):
        replay([first, replace(last, ts=last.ts + interval)], settings)


def test_replay_keeps_every_model_of_a_log_apart_past_the_live_cap() -> None:
    """limits.max_models bounds a live pod's series; a file replayed has none to bound."""
    settings = load_settings()
    many = settings.limits.max_models + 4
    logs = [replace(r, model=f"m{i % many}", request_id=f"{i}") for i, r in enumerate(records(400))]
    analyzer, end = replay(logs, settings)
    snapshot = analyzer.snapshot(end)
    assert {f"m{i}" for i in range(many)} == {view.key.model for view in snapshot.rollups}
    assert not snapshot.folded_models


def test_a_replay_evaluates_on_the_logs_clock_before_a_record_at_an_evaluation_time() -> None:
    """Records 1 s apart from t = 100; zones every 10 s from the first record; a gate of 11
    requests. The record at 110 comes after the evaluation at 110 (10 requests: none), so the
    first zone is the evaluation at 120's; the analysis started at the first record."""
    log = sorted(records(60), key=lambda r: r.ts)
    shifted = [replace(r, ts=r.ts + 99.0) for r in log]  # 100, 101, ...
    settings = load_settings(zones={"min_requests": 11, "min_trials": 1, "min_dwell_seconds": 0})
    analyzer, end = replay(shifted, settings)
    assert end == 159.0
    (view,) = [v for v in analyzer.snapshot(end).slices if v.key.task == "code"]
    assert 120.0 == view.zone_since
    assert 100.0 == analyzer.snapshot(end).started  # the analysis started with the log
    empty, at = replay([], settings)
    assert (0.0, 0.0) == (at, empty.snapshot(at).started)


def test_a_replay_runs_under_the_logs_config() -> None:
    """A log whose config line says a synthetic verifier: its slices are not judged."""
    from specwatch.upstream.specconfig import spec_config

    spec = {"method": "ngram", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic"}
    analyzer, end = replay(records(40), load_settings(), spec_config(spec, None, "stable"))
    assert {"not_applicable"} == {v.zone for v in analyzer.snapshot(end).slices}
