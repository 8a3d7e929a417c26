"""Follow a log file written by another process, like `tail -F`.

Survives rotation by rename (the old file is read to its end before the new one is opened),
copytruncate (the file shrinks: reading restarts at its beginning), a partial last line (held
until its newline arrives) and a file that does not exist yet. Polls: no inotify needed, works
on every volume type a sidecar may share with vLLM.

Known limit of copytruncate itself: lines appended between the last poll and the truncation are
in the copy, not in the followed file; poll often to make that window small.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

MAX_LINE = 1 << 20  # a "line" longer than this is passed on in pieces rather than held forever


class LogFollower:
    def __init__(
        self,
        path: Path,
        on_line: Callable[[str], None],
        poll_seconds: float = 0.25,
        from_start: bool = False,
    ) -> None:
        self._path = path
        self._on_line = on_line
        self._poll = poll_seconds
        self._from_start = from_start  # else a file there at start is read from its end
        self._file: BinaryIO | None = None
        self._inode: int | None = None
        self._partial = b""
        self._first_open = True

    def _open(self) -> bool:
        try:
            handle = self._path.open("rb")
        except FileNotFoundError:
            self._first_open = False  # a file created later is read from its start
            return False
        if self._first_open and not self._from_start:
            handle.seek(0, os.SEEK_END)
        self._first_open = False
        self._file = handle
        self._inode = os.fstat(handle.fileno()).st_ino
        return True

    def _emit(self, data: bytes, final: bool) -> None:
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        if (final and self._partial) or len(self._partial) > MAX_LINE:
            lines.append(self._partial)
            self._partial = b""
        for line in lines:
            self._on_line(line.decode("utf-8", errors="replace"))

    def _drain(self, final: bool = False) -> None:
        assert self._file is not None
        while True:
            data = self._file.read(1 << 16)
            if not data:
                break
            self._emit(data, final=False)
        if final:
            self._emit(b"", final=True)

    def poll_once(self) -> None:
        if self._file is None and not self._open():
            return
        assert self._file is not None
        self._drain()
        try:
            stat = os.stat(self._path)
        except FileNotFoundError:
            return  # renamed away and not yet recreated: keep the old handle
        if stat.st_ino != self._inode:
            self._drain(final=True)  # rotated: finish the old file, then start the new one
            self._file.close()
            self._file = None
            if self._open():
                self._drain()
        elif stat.st_size < self._file.tell():
            self._emit(b"", final=True)  # truncated (copytruncate): start over
            self._file.seek(0)
            self._drain()

    async def run(self) -> None:
        try:
            while True:
                self.poll_once()
                await asyncio.sleep(self._poll)
        finally:
            if self._file is not None:
                self._file.close()
