"""Speculation by load: batch-size buckets, the K table, and `advise` on a cycle log."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from msgspec.structs import replace
from specwatch import conventions as C
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import LoadBuckets
from specwatch.analysis.speed.load import LoadTable
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import from_line, to_line

K = 4


def gain_at(in_flight: int) -> float:
    """The truth of the check in issue #17: fast at low load, slower than none from 17."""
    return 1.8 if in_flight <= 4 else 1.2 if in_flight <= 16 else 0.8


def write_log(path: Path, requests: int, seed: int = 1) -> None:
    """One model, K = 4, alpha 0.75, requests at in_flight 1..64 and A/B baseline records;
    speculation's time per token is the baseline's over the gain at its load."""
    rng = random.Random(seed)
    with path.open("wb") as handle:
        for i in range(requests):
            in_flight = rng.randint(1, 64)
            baseline = rng.random() < 0.3
            base_tpot = 0.030 * rng.lognormvariate(0.0, 0.2)
            spec = None
            tokens = rng.randint(40, 120)
            if not baseline:
                accepted: list[int] = []
                while sum(accepted) + len(accepted) < tokens:
                    a = 0
                    while a < K and rng.random() < 0.75:
                        a += 1
                    accepted.append(a)
                spec = SpecDecodeBlock(K, (K,) * len(accepted), tuple(accepted))
            record = RequestRecord(
                ts=1000.0 + i * 0.5, request_id=str(i), model="m", task="chat",
                outcome=C.Outcome.OBSERVED, prompt_tokens=200, completion_tokens=tokens,
                spec=spec,
                latency=Latency(tpot=base_tpot if baseline else base_tpot / gain_at(in_flight)),
                variant=C.VARIANT_BASELINE if baseline else C.VARIANT_SPEC, in_flight=in_flight,
            )  # fmt: skip
            handle.write(to_line(record))


def test_batch_buckets_are_inclusive_ranges_from_one() -> None:
    buckets = LoadBuckets((1, 4, 8))
    assert ("1", "2-4", "5-8", "9+") == buckets.labels
    assert [0, 1, 1, 2, 2, 3, 3] == [buckets.index(n) for n in (1, 2, 4, 5, 8, 9, 500)]


def test_in_flight_survives_the_cycle_log_and_is_optional() -> None:
    record = RequestRecord(ts=1.0, request_id="r", model="m", task="chat",
                           outcome=C.Outcome.OBSERVED, in_flight=17, prompt_tokens=10,
                           completion_tokens=3,
                           spec=SpecDecodeBlock(2, (2,), (1,)))  # fmt: skip
    assert 17 == from_line(to_line(record)).in_flight
    line = to_line(record).replace(b',"in_flight":17', b"")
    assert from_line(line).in_flight is None  # an older writer: no load known


def test_the_k_table_fills_gaps_merges_and_ends_at_the_largest_load() -> None:
    table = LoadTable(LoadBuckets((1, 4, 8, 16)), max_position=4)
    good = Counts.of_request((4,) * 10, (4,) * 10, 4)  # every draft accepted: K=4 pays
    bad = Counts.of_request((4,) * 10, (0,) * 10, 4)  # none accepted: K=0
    table.add("m", 1, good, False, None, None)
    table.add("m", 12, bad, False, None, None)  # nothing between 2 and 8: K from below
    k_table = table.k_table("m", cost_ratio=0.05, confidence=0.95, min_requests=20)
    assert k_table is not None
    assert [[1, 8, 4], [9, 12, 0]] == k_table.schedule()
    assert [None, None] == [r.method for r in k_table.ranges[1:3]]  # filled, not judged
    assert 12 == k_table.ranges[-1].last


def test_a_bucket_without_traffic_takes_the_k_of_the_nearest_bucket_below() -> None:
    """K 4 at load 1, 0 at 3 and 4 at 12: loads 5-8 have no traffic and stay off, as at 2-4;
    the lowest known bucket's K would turn speculation on between two that measured it off."""
    table = LoadTable(LoadBuckets((1, 4, 8, 16)), max_position=4)
    good = Counts.of_request((4,) * 10, (4,) * 10, 4)
    bad = Counts.of_request((4,) * 10, (0,) * 10, 4)
    table.add("m", 1, good, False, None, None)
    table.add("m", 3, bad, False, None, None)
    table.add("m", 12, good, False, None, None)
    k_table = table.k_table("m", cost_ratio=0.05, confidence=0.95, min_requests=20)
    assert k_table is not None
    assert [[1, 1, 4], [2, 8, 0], [9, 12, 4]] == k_table.schedule()


def test_advise_gives_vllm_a_schedule_that_turns_speculation_off_where_it_is_slower(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "cycles.jsonl"
    write_log(log, 6000)
    assert 0 == main(["advise", "--cycle-log", str(log), "--json"])  # no --cost-ratio
    (model,) = json.loads(capsys.readouterr().out)["batch_size"]
    schedule = model["num_speculative_tokens_per_batch_size"]
    assert 1 == schedule[0][0]
    assert 64 == schedule[-1][1]
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(schedule))

    def k_at(batch: int) -> int:
        return int(next(k for first, last, k in schedule if first <= batch <= last))

    assert (4, 4, 0, 0) == (k_at(1), k_at(4), k_at(48), k_at(64))
    assert 4 == k_at(10)  # 1.2: still faster
    assert "measured" == model["cost_ratio_source"]
    slow = next(r for r in model["ranges"] if r["first"] == 33)
    assert "measured" == slow["method"]
    assert slow["upper"] < 1.0


def test_advise_computes_the_k_table_at_the_given_cost_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--cost-ratio 0.6` is what the modelled ranges are computed at, not the default 0.05:
    drafting that costs 60% of a target step pays only for the first position at alpha 0.75."""
    log = tmp_path / "cycles.jsonl"
    records = [replace(r, variant=C.VARIANT_SPEC, in_flight=1) for r in _spec_only(log, 400)]
    log.write_bytes(b"".join(map(to_line, records)))
    schedules = {}
    for cost in ("0.6", "0.05"):
        assert 0 == main(["advise", "--cycle-log", str(log), "--cost-ratio", cost, "--json"])
        (model,) = json.loads(capsys.readouterr().out)["batch_size"]
        assert "given" == model["cost_ratio_source"]
        schedules[cost] = model["num_speculative_tokens_per_batch_size"]
    assert [[1, 1, 1]] == schedules["0.6"]
    assert [[1, 1, 4]] == schedules["0.05"]


def _spec_only(path: Path, requests: int) -> list[RequestRecord]:
    """`write_log`'s speculative records only (no A/B baseline: every range is modelled)."""
    write_log(path, requests)
    return [r for r in records_of(path) if r.spec is not None]


def records_of(path: Path) -> list[RequestRecord]:
    return [from_line(line) for line in path.read_bytes().splitlines()]


def test_the_load_window_forgets_and_metrics_carry_every_load_bucket(tmp_path: Path) -> None:
    """Through the analyzer and the collector: per model and bucket the counters add up to
    the records', the windowed gain is below 1 only where speculation is slower, and an hour
    of faster traffic at high load later the window says so while since-start still mixes."""
    from prometheus_client.core import CollectorRegistry
    from specwatch.analysis.analyzer import Analyzer
    from specwatch.export.collector import SpecwatchCollector
    from specwatch.export.reading import Reading
    from specwatch.settings import load_settings

    log = tmp_path / "cycles.jsonl"
    write_log(log, 6000)
    settings = load_settings()
    analyzer = Analyzer(settings, started=1000.0)
    records = records_of(log)
    for record in records:
        analyzer.ingest(record)
    end = records[-1].ts

    def gains(now: float) -> dict[str, float]:
        snapshot = analyzer.snapshot(now)
        (table,) = snapshot.load_window
        return {r.label: r.gain for r in table.ranges if r.method == "measured" and r.gain}

    before = gains(end)
    assert before["33-64"] < 1.0 < before["1"]
    registry = CollectorRegistry()
    registry.register(SpecwatchCollector(lambda: Reading(analyzer.snapshot(end))))
    value = registry.get_sample_value
    accepted = sum(sum(r.spec.accepted) for r in records if r.spec and r.in_flight == 1)
    run = {"config": C.UNKNOWN_CONFIG, "track": C.TRACK_STABLE}
    assert accepted == value(
        "specwatch_load_accepted_tokens_total", {"model": "m", "load": "1", **run}
    )
    advised = {"model": "m", "load": "33-64", **run}
    assert 0 == value("specwatch_load_advised_num_speculative_tokens", advised)
    upper = value("specwatch_load_gain_ratio", {**advised, "method": "measured", "bound": "upper"})
    assert upper is not None
    assert upper < 1.0
    # an hour and more later: speculation at high load is now as fast as at low load
    later = end + settings.load.window_seconds + 60
    for i, record in enumerate(records):
        tpot = record.latency.tpot
        assert tpot is not None
        if record.variant == C.VARIANT_SPEC and record.in_flight and record.in_flight > 16:
            tpot = tpot * 0.8 / 1.8
        analyzer.ingest(replace(record, ts=later - 3000 + i * 0.5, latency=Latency(tpot=tpot)))
    after = gains(later + 3000)
    assert after["33-64"] > 1.5
    (since_start,) = analyzer.snapshot(later + 3000).load
    mixed = {r.label: r.gain for r in since_start.ranges}
    assert mixed["33-64"] is not None
    assert mixed["33-64"] < after["33-64"]


def test_a_load_bucket_is_measured_only_where_both_sides_timed_the_minimum() -> None:
    """Speculation 30% slower than its A/B baseline at load 1: measured, K off there, with the
    gain's bounds and each side's requests. With 19 baseline requests (one short of 20) the
    bucket is modelled from acceptance instead, however many speculative ones it has, and
    the same with the sides the other way round."""
    rng = random.Random(59)
    good = Counts.of_request((4,) * 10, (4,) * 10, 4)  # acceptance alone: K 4 pays

    def table(spec_n: int, base_n: int) -> LoadTable:
        made = LoadTable(LoadBuckets((1, 4, 8, 16)), max_position=4)
        for _ in range(spec_n):
            made.add("m", 1, good, False, 0.013 * rng.uniform(0.95, 1.05), 50)
        for _ in range(base_n):
            made.add("m", 1, None, True, 0.010 * rng.uniform(0.95, 1.05), 50)
        return made

    measured = table(40, 20).k_table("m", cost_ratio=0.05, confidence=0.95, min_requests=20)
    assert measured is not None
    (row,) = measured.ranges
    assert ("measured", 0, 40, 20) == (row.method, row.k, row.spec_requests, row.baseline_requests)
    assert row.lower is not None
    assert row.gain is not None
    assert row.upper is not None
    assert row.gain == pytest.approx(0.010 / 0.013, rel=0.03)
    assert row.lower < row.gain < row.upper < 1.0
    for spec_n, base_n in ((40, 19), (19, 40)):
        k_table = table(spec_n, base_n).k_table("m", 0.05, 0.95, 20)
        assert k_table is not None
        assert ("modelled", 4) == (k_table.ranges[0].method, k_table.ranges[0].k)
