"""DuckDB, embedded: one connection per command, the query run with its progress on stderr.

DuckDB streams the files through the aggregation: memory holds the groups and DuckDB's
buffers (`memory_limit`), never the input, whatever its size. Only the `analyze` extra
installs it (`pip install 'specwatch[analyze]'`); the sidecar never imports this module.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from specwatch.fleet.source import Files, SourceError, from_item, parquet_describe
from specwatch.fleet.sql import needed_columns, query


class Engine:
    def __init__(self, threads: int | None, memory_limit: str, progress: TextIO | None) -> None:
        import duckdb

        self._duckdb = duckdb
        self._con = duckdb.connect(config={"memory_limit": memory_limit})
        # Row order is never read (results are grouped): dropping it lets DuckDB stream
        self._con.execute("SET preserve_insertion_order = false")
        if threads is not None:
            self._con.execute(f"SET threads = {int(threads)}")
        self._progress = progress

    def aggregate(
        self,
        files: Files,
        dimensions: Sequence[str],
        ctx_bounds: Sequence[int],
        load_bounds: Sequence[int],
        since: float | None = None,
        until: float | None = None,
        with_load: bool = False,
    ) -> list[tuple[Any, ...]]:
        """fleet/sql.py's rows over `files`; SourceError when DuckDB cannot read them.
        `with_load`: also what the K table reads (largest load, decode times)."""
        columns = None
        try:
            if files.parquet:
                columns = {row[0] for row in self._con.execute(parquet_describe(files)).fetchall()}
            source = from_item(files, needed_columns(dimensions, with_load), columns)
            sql = query(source, dimensions, ctx_bounds, load_bounds, since, until, with_load)
            return self._run(sql, files)
        except self._duckdb.Error as error:
            raise SourceError(str(error).splitlines()[0]) from error

    def select(
        self, files: Files, needed: frozenset[str], build: Callable[[str], str]
    ) -> list[tuple[Any, ...]]:
        """The rows of `build(source)` over `files` (the latency objectives' query)."""
        try:
            columns = None
            if files.parquet:
                columns = {row[0] for row in self._con.execute(parquet_describe(files)).fetchall()}
            return self._run(build(from_item(files, needed, columns)), files)
        except self._duckdb.Error as error:
            raise SourceError(str(error).splitlines()[0]) from error

    def first_seen(self, files: Files, dimension: str) -> dict[str, float]:
        """Per value of `dimension` (config, track) the time of its first request."""
        columns = None
        try:
            if files.parquet:
                columns = {row[0] for row in self._con.execute(parquet_describe(files)).fetchall()}
            source = from_item(files, frozenset(("ts", dimension)), columns)
            sql = (
                f"SELECT {dimension}, min(ts) FROM {source} "
                f"WHERE ts IS NOT NULL AND {dimension} IS NOT NULL GROUP BY 1"
            )
            return {str(value): float(ts) for value, ts in self._run(sql, files)}
        except self._duckdb.Error as error:
            raise SourceError(str(error).splitlines()[0]) from error

    def _run(self, sql: str, files: Files) -> list[tuple[Any, ...]]:
        """Run on a thread of its own, so this one can say how far it got: a line on stderr
        every 2 s of a run that takes longer than that."""
        result: list[list[tuple[Any, ...]]] = []
        failure: list[BaseException] = []

        def work() -> None:
            try:
                result.append(self._con.execute(sql).fetchall())
            except BaseException as error:  # handed to the caller's thread
                failure.append(error)

        worker = threading.Thread(target=work, name="duckdb", daemon=True)
        started = time.monotonic()
        worker.start()
        said = started
        while worker.is_alive():
            worker.join(0.25)
            now = time.monotonic()
            if self._progress is not None and worker.is_alive() and now - said >= 2.0:
                said = now
                done = self._con.query_progress()  # -1 where DuckDB cannot tell (JSON)
                share = f"{done:.0f}% of " if done >= 0 else ""
                print(
                    f"specwatch: reading {share}{files.count} file(s), "
                    f"{files.size / 2**20:,.0f} MiB on disk: {now - started:.0f} s so far",
                    file=self._progress,
                    flush=True,
                )
        if failure:
            raise failure[0]
        return result[0]

    def write_parquet(self, path: Path, rows: list[dict[str, Any]]) -> None:
        """The groups as a Parquet file, typed by DuckDB from their JSON."""
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as scratch:
            for row in rows:
                scratch.write(json.dumps(row) + "\n")
        try:
            target = str(path).replace("'", "''")
            self._con.execute(
                f"COPY (SELECT * FROM read_json('{scratch.name}', format = 'newline_delimited')) "
                f"TO '{target}' (FORMAT parquet)"
            )
        except self._duckdb.Error as error:
            raise SourceError(str(error).splitlines()[0]) from error
        finally:
            Path(scratch.name).unlink(missing_ok=True)
        print(f"specwatch: wrote {len(rows)} group(s) to {path}", file=sys.stderr)


__all__ = ["Engine", "SourceError"]
