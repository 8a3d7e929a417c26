"""The cycle log rotates by size and by age, keeps `backups` files, gzips what it rotated when
asked, and every file (rotated or current) reads back whole, each starting with its config."""

from __future__ import annotations

from pathlib import Path

from specwatch import conventions as C
from specwatch.core.records import Latency, RequestRecord, SpecConfig, SpecDecodeBlock
from specwatch.store.cyclelog import LineError, read_cycle_logs
from specwatch.store.writer import CycleLogWriter

CONFIG = SpecConfig("c1", "ngram", None, 4, (), "standard", "0.32.0", "canary")


def record(i: int, ts: float) -> RequestRecord:
    return RequestRecord(
        ts=ts,
        request_id=f"r{i}",
        model="m",
        task="chat",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=10,
        completion_tokens=20,
        spec=SpecDecodeBlock(4, (4,) * 8, (2,) * 8),
        latency=Latency(),
        config="c1",
    )


def read_all(paths: list[Path]) -> tuple[list[str], list[SpecConfig]]:
    errors: list[LineError] = []
    configs: list[SpecConfig] = []
    ids = [r.request_id for r in read_cycle_logs(sorted(paths), errors, configs)]
    assert [] == errors
    return ids, configs


def test_by_size_files_stay_under_the_limit_and_keep_the_newest_backups(tmp_path: Path) -> None:
    path = tmp_path / "cycles.jsonl"
    writer = CycleLogWriter(path, 4096, backups=2, config=CONFIG)
    for i in range(200):
        writer.write(record(i, 1.8e9 + i))
    writer.close()
    files = sorted(tmp_path.iterdir())
    assert [path, tmp_path / "cycles.jsonl.1", tmp_path / "cycles.jsonl.2"] == files
    assert all(f.stat().st_size <= 4096 for f in files)
    ids, configs = read_all(files)
    assert len(configs) == 3  # each file starts with the config
    assert len(set(ids)) == len(ids)  # no line twice
    assert "r199" in ids  # the newest are kept
    assert "r0" not in ids  # the oldest were rotated away


def test_by_age_and_gzipped_every_line_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "cycles.jsonl"
    writer = CycleLogWriter(
        path, 64 * 1024 * 1024, backups=10, config=CONFIG, max_age=60.0, compress=True
    )
    for i in range(300):  # one a second: a file per minute
        writer.write(record(i, 1.8e9 + i))
    writer.close()  # waits for the last compression
    names = sorted(p.name for p in tmp_path.iterdir())
    assert ["cycles.jsonl", *(f"cycles.jsonl.{i}.gz" for i in range(1, 5))] == sorted(names)
    rotated = [p for p in tmp_path.iterdir() if p.suffix == ".gz"]
    assert all(p.read_bytes()[:2] == b"\x1f\x8b" for p in rotated)
    ids, configs = read_all(list(tmp_path.iterdir()))
    assert {f"r{i}" for i in range(300)} == set(ids)
    assert {("c1", "canary")} == {(c.id, c.track) for c in configs}
    assert b'"track":"canary"' in path.read_bytes()
