"""What fleet analysis reads: cycle logs named by paths, directories and globs, as one DuckDB
FROM item with the columns of fleet/sql.py.

A file is known by its first bytes, not its name: Parquet (`PAR1`), gzip (a rotated,
compressed cycle log: FILE.1.gz, or logrotate's), or JSON lines. Parquet files (cycle logs
a pipeline converted, e.g. with DuckDB's COPY) need the cycle log's columns; those a file
lacks among the optional ones are read as NULL.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from specwatch.fleet.sql import COLUMNS
from specwatch.store.cyclelog import GZIP_MAGIC

PARQUET_MAGIC = b"PAR1"
REQUIRED = ("ts", "model", "task", "prompt_tokens", "per_step_drafted", "per_step_accepted")


class SourceError(ValueError):
    pass


@dataclass(slots=True)
class Files:
    plain: list[str] = field(default_factory=list)
    gzip: list[str] = field(default_factory=list)
    parquet: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # paths and globs that matched nothing
    size: int = 0  # bytes on disk

    @property
    def count(self) -> int:
        return len(self.plain) + len(self.gzip) + len(self.parquet)


def find(paths: list[str]) -> Files:
    """Every file the paths name: a file, a directory (every file under it), or a glob
    (`**` recursive). Each file once, in the order given."""
    files = Files()
    seen: set[Path] = set()
    for given in paths:
        matched = [Path(p) for p in sorted(glob.glob(given, recursive=True))] or [Path(given)]
        found = False
        for path in matched:
            candidates = (
                sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
            )
            for candidate in candidates:
                if not candidate.is_file() or candidate.resolve() in seen:
                    continue
                seen.add(candidate.resolve())
                found = True
                _classify(candidate, files)
        if not found:
            files.missing.append(given)
    return files


def _classify(path: Path, files: Files) -> None:
    with path.open("rb") as probe:
        head = probe.read(4)
    files.size += path.stat().st_size
    if head == PARQUET_MAGIC:
        files.parquet.append(str(path))
    elif head[:2] == GZIP_MAGIC:
        files.gzip.append(str(path))
    else:
        files.plain.append(str(path))


def _quoted(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def _struct() -> str:
    return "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in COLUMNS.items()) + "}"


def from_item(files: Files, needed: frozenset[str], parquet_columns: set[str] | None = None) -> str:
    """The FROM item over every file: JSON lines (plain and gzip) and Parquet, one relation
    with every column of COLUMNS, those not `needed` NULL (DuckDB then skips them).
    `parquet_columns`: the columns the Parquet files have (DESCRIBE), when there are any."""
    parts = []
    names = ", ".join(
        name if name in needed else f"NULL::{kind} AS {name}" for name, kind in COLUMNS.items()
    )
    for paths, compression in ((files.plain, "none"), (files.gzip, "gzip")):
        if paths:
            parts.append(
                f"SELECT {names} FROM read_json({_quoted(paths)}, format = 'newline_delimited', "
                f"columns = {_struct()}, ignore_errors = true, compression = '{compression}', "
                "maximum_object_size = 67108864)"
            )
    if files.parquet:
        have = parquet_columns or set()
        absent = [name for name in REQUIRED if name not in have]
        if absent:
            raise SourceError(f"the Parquet files lack the cycle log's {', '.join(absent)}")
        chosen = ", ".join(
            f"CAST({name} AS {kind}) AS {name}"
            if name in have and name in needed
            else f"NULL::{kind} AS {name}"
            for name, kind in COLUMNS.items()
        )
        parts.append(
            f"SELECT {chosen} FROM read_parquet({_quoted(files.parquet)}, union_by_name = true)"
        )
    return "(" + " UNION ALL ".join(parts) + ")"


def parquet_describe(files: Files) -> str:
    return f"DESCRIBE SELECT * FROM read_parquet({_quoted(files.parquet)}, union_by_name = true)"


def when(text: str, now: datetime | None = None) -> float:
    """--since / --until: unix seconds, an ISO 8601 date or time (UTC unless it says), or a
    duration back from now (`90m`, `24h`, `7d`)."""
    text = text.strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    try:
        return float(text)
    except ValueError:
        pass
    if text and text[-1] in units and text[:-1].replace(".", "", 1).isdigit():
        back = timedelta(seconds=float(text[:-1]) * units[text[-1]])
        return ((now or datetime.now(UTC)) - back).timestamp()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SourceError(
            f"{text!r} is neither unix seconds, an ISO 8601 time nor a duration like 24h"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
