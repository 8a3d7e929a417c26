"""Following a log file through rotation and truncation loses and duplicates no line."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from specwatch.upstream.logfollow import LogFollower


class Writer:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.n = 0

    def lines(self, count: int) -> None:
        with self.path.open("a") as handle:
            for _ in range(count):
                handle.write(f"line {self.n}\n")
                self.n += 1


def follow(path: Path) -> tuple[LogFollower, list[str]]:
    seen: list[str] = []
    return LogFollower(path, seen.append, from_start=True), seen


def expected(n: int) -> list[str]:
    return [f"line {i}" for i in range(n)]


def test_a_file_that_appears_later_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    follower, seen = follow(path)
    follower.poll_once()
    writer = Writer(path)
    writer.lines(3)
    follower.poll_once()
    assert expected(3) == seen


def test_rotation_by_rename_mid_stream(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    writer = Writer(path)
    follower, seen = follow(path)
    writer.lines(5)
    follower.poll_once()
    writer.lines(3)  # written after the last poll, before the rename: still in the old file
    path.rename(tmp_path / "vllm.log.1")
    follower.poll_once()  # the old file is gone from the path, not yet replaced
    writer.lines(4)  # a new file at the path
    follower.poll_once()
    writer.lines(2)
    follower.poll_once()
    assert expected(14) == seen


def test_copytruncate_and_plain_truncation(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    writer = Writer(path)
    follower, seen = follow(path)
    writer.lines(6)
    follower.poll_once()
    os.truncate(path, 0)  # copytruncate: the copy is elsewhere; the file starts over
    writer.lines(2)
    follower.poll_once()
    writer.lines(3)
    follower.poll_once()
    assert expected(11) == seen


def test_a_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    path.write_text("first\nsec")
    follower, seen = follow(path)
    follower.poll_once()
    assert ["first"] == seen
    with path.open("a") as handle:
        handle.write("ond\nthird\n")
    follower.poll_once()
    assert ["first", "second", "third"] == seen


def test_an_existing_file_is_followed_from_its_end_by_default(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    Writer(path).lines(3)
    seen: list[str] = []
    follower = LogFollower(path, seen.append)
    follower.poll_once()
    with path.open("a") as handle:
        handle.write("new\n")
    follower.poll_once()
    assert ["new"] == seen


async def until(predicate: Callable[[], bool], seconds: float = 10.0) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():  # noqa: ASYNC110  # the follower polls a file; so does the test
            await asyncio.sleep(0.005)


async def test_a_live_writer_rotated_and_truncated_mid_stream_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "vllm.log"
    seen: list[str] = []
    follower = LogFollower(path, seen.append, poll_seconds=0.005, from_start=True)
    task = asyncio.create_task(follower.run())
    writer = Writer(path)
    for i in range(60):
        writer.lines(7)
        if i in (15, 40):
            path.rename(tmp_path / f"vllm.log.{i}")  # rotation while lines keep coming
        if i == 25:
            await until(lambda: len(seen) == writer.n)  # copytruncate once it has it all
            os.truncate(path, 0)
        await asyncio.sleep(0.002)
    await until(lambda: len(seen) >= writer.n)  # a lost line fails here rather than hangs
    await asyncio.sleep(0.05)
    task.cancel()
    assert expected(writer.n) == seen
