"""The cycle log's writer: appends a line per observed request, rotates by size and age, and
gzips what it rotated (off the event loop). The line format and the reader are cyclelog.py's."""

from __future__ import annotations

import gzip
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO

from specwatch.conventions import VARIANT_BASELINE, Outcome
from specwatch.core.records import RequestRecord, SpecConfig
from specwatch.store.configline import config_line
from specwatch.store.cyclelog import to_line


class CycleLogWriter:
    """Appends observed requests; rotates when the next line would pass `max_bytes`, or when
    the file's first record is `max_age` seconds older than the next one (None: by size only).
    With `compress`, a rotated file is gzipped (FILE.1.gz ...) on a thread of its own: a
    rotation never holds the event loop for the compression."""

    def __init__(
        self,
        path: Path,
        max_bytes: int,
        backups: int,
        config: SpecConfig | None = None,
        max_age: float | None = None,
        compress: bool = False,
        track: str | None = None,
    ) -> None:
        """`track`: the pod's, on every line (it never changes in a pod's life); `config`:
        written at the top of every file opened once it is known (`labelled`)."""
        self._config = config
        self._track = track if config is None else config.track
        self._path = path
        self._max_bytes = max_bytes
        self._backups = backups
        self._max_age = max_age
        self._suffix = ".gz" if compress else ""
        self._compressing: Future[None] | None = None
        self._handle: IO[bytes] | None = None
        self._size = 0
        self._first: float | None = None  # the current file's first record's time

    def labelled(self, config: SpecConfig) -> None:
        """The config the records run under, once vLLM has said its version: files opened
        from now on start with it."""
        self._config = config

    def _open(self) -> IO[bytes]:
        if self._handle is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self._path.open("ab")
            self._size = self._handle.tell()
            if self._config is not None:  # every file says what config its records ran under
                line = config_line(self._config)
                self._handle.write(line)
                self._size += len(line)
        return self._handle

    def _backup(self, i: int) -> Path:
        return self._path.with_name(f"{self._path.name}.{i}{self._suffix}")

    def _rotate(self) -> None:
        self.close()  # (and waits for the previous compression: no two at once)
        for i in range(self._backups - 1, 0, -1):
            if self._backup(i).exists():
                self._backup(i).replace(self._backup(i + 1))
        self._first = None
        if not self._backups:
            self._path.unlink()
        elif not self._suffix:
            self._path.replace(self._backup(1))
        else:
            rotated = self._path.with_name(f"{self._path.name}.rotating")
            self._path.replace(rotated)
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cycle-log-gzip")
            self._compressing = pool.submit(_gzip, rotated, self._backup(1))
            pool.shutdown(wait=False)

    def _due(self, line: bytes, ts: float) -> bool:
        if self._size and self._size + len(line) > self._max_bytes:
            return True
        return (
            self._max_age is not None
            and self._first is not None
            and (ts - self._first >= self._max_age)
        )

    def write(self, record: RequestRecord) -> None:
        """Every record the analysis counts steps or a baseline's time of: observed ones, and a
        client's that left after vLLM's final metrics had passed (their steps ran and were
        counted live), so that a replay of the log counts what the live sidecar counted."""
        baseline = record.variant == VARIANT_BASELINE
        if record.spec is None and not baseline:
            return
        if record.outcome != Outcome.OBSERVED and (
            baseline or record.outcome != Outcome.CLIENT_ABORTED
        ):
            return
        line = to_line(record, self._track)
        handle = self._open()
        if self._due(line, record.ts):
            self._rotate()
            handle = self._open()
        if self._first is None:
            self._first = record.ts
        handle.write(line)
        handle.flush()  # a line at a time: a crash loses at most the line being written
        self._size += len(line)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self._compressing is not None:
            self._compressing.result()  # (an OSError reaches the writer's caller, counted)
            self._compressing = None


def _gzip(source: Path, target: Path) -> None:
    """`source` compressed into `target` (written aside, then renamed), then removed."""
    partial = target.with_name(target.name + ".part")
    with source.open("rb") as plain, gzip.open(partial, "wb", compresslevel=6) as packed:
        shutil.copyfileobj(plain, packed, 1024 * 1024)
    partial.replace(target)
    source.unlink()
