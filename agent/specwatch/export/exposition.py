"""The Prometheus text format (0.0.4) of specwatch's families, written for speed.

prometheus-client's `generate_latest` validates and escapes every label name of every sample
(a regex per label): at full cardinality (84k series) that was three quarters of a 2-second
scrape. specwatch's label names are its own constants, valid by construction
(tests/unit/export/test_exposition.py checks every one), so they are written as they are; label
values are escaped only when they hold a character that needs it. The output is
byte-identical to `generate_latest`'s for what specwatch exports (the test compares them);
a family of a kind this writer does not know, or an OpenMetrics-only sample, sends the whole
scrape through `generate_latest` instead.

specwatch's own families come as groups of samples (export/families.py), and `Exposition`
keeps each group's rendered lines from one scrape to the next: a group whose values did not
change (a quiet slice, a settled histogram) is not written again, and a family whose groups
are all the very tuples of last time (the collector keeps a quiet slice's) is passed with one
list comparison. A group that changed is filled into its template (its lines with `%s` for
the values, kept beside its text: about as much memory again) in one C-level format. Each
scrape keeps only the groups it wrote, so what is kept is bounded by the cardinality limits,
like the series.
Groups are compared as values (with the group at the same place last time), so a value that
turned from 0.0 into -0.0 keeps its text "0.0" (generate_latest would write "-0.0": the same
number to Prometheus).

A scrape runs on the event loop in turns of about a millisecond (the reading, the families,
the text), the loop relaying requests in between (turns.py): at full cardinality a scrape
takes tens of milliseconds, which in one go every proxied stream would wait for.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Generator, Iterable
from itertools import chain, compress, count, repeat
from operator import ne
from typing import Protocol

from prometheus_client import generate_latest
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from specwatch import conventions as C
from specwatch.core.turns import finish, run
from specwatch.export.families import Family, Group
from specwatch.export.reading import Reading

_KINDS = {"counter": "counter", "gauge": "gauge", "histogram": "histogram", "info": "gauge"}
_SUFFIX = {"counter": "_total", "info": "_info"}
_OPENMETRICS_ONLY = ("_created", "_gsum", "_gcount")


class _Unusual(Exception):
    """Something only `generate_latest` writes right."""


class _Escaped(dict[str, str]):
    """Label values, escaped (\\, newline, double quote) on first sight: they repeat."""

    def __missing__(self, text: str) -> str:
        escaped = text
        if "\\" in text or "\n" in text or '"' in text:
            escaped = text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
        self[text] = escaped
        return escaped


def _number(value: float) -> str:
    if type(value) is int and 0 <= value < 1_000_000:  # a count (a histogram bucket): "7.0"
        return f"{value}.0"
    text = repr(float(value))
    if "e" in text or "n" in text or text.find(".") > 6:  # inf, nan, exponents, big: Go's form
        return str(floatToGoString(value))  # type: ignore[no-untyped-call]
    return text


def _write(registry: Collector) -> str:
    out: list[str] = []
    add = out.append
    escaped = _Escaped()
    orders: dict[tuple[str, ...], list[str]] = {}  # label names as given -> sorted
    for metric in registry.collect():
        kind = _KINDS.get(metric.type)
        if kind is None:
            raise _Unusual(metric.type)
        name = metric.name + _SUFFIX.get(metric.type, "")
        add(f"# HELP {name} {_escape_help(metric.documentation)}\n# TYPE {name} {kind}\n")
        for sample in metric.samples:
            if sample.timestamp is not None or sample.exemplar is not None:
                raise _Unusual(sample.name)
            if sample.name.endswith(_OPENMETRICS_ONLY):
                raise _Unusual(sample.name)
            labels = sample.labels
            if labels:
                given = tuple(labels)
                order = orders.get(given)
                if order is None:
                    order = orders[given] = sorted(given)
                pairs = ",".join([f'{k}="{escaped[labels[k]]}"' for k in order])
                add(f"{sample.name}{{{pairs}}} {_number(sample.value)}\n")
            else:
                add(f"{sample.name} {_number(sample.value)}\n")
    return "".join(out)


def text_exposition(registry: Collector) -> bytes:
    try:
        return _write(registry).encode("utf-8")
    except _Unusual:
        return bytes(generate_latest(registry))


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


class _Numbers(dict[float, bytes]):
    """Sample values as the text format writes them, counts kept on first sight: they repeat
    (histogram buckets, positions), so a run's values are looked up in C
    (`map(numbers.__getitem__, values)`). Measured values (floats) rarely repeat and are
    written each time, as is zero (0 == -0.0, which is written "-0.0"); the table starts
    again past `LIMIT` counts."""

    LIMIT = 1 << 16

    def __missing__(self, value: float) -> bytes:
        text = _number(value).encode()
        if type(value) is int and value:
            if len(self) >= self.LIMIT:
                self.clear()
            self[value] = text
        return text


class _Head:
    """How one family's groups are written: its header, and the template of a group's lines
    (everything but the values, `%s` where they go)."""

    __slots__ = (
        "bucket",
        "header",
        "histogram",
        "names",
        "order",
        "run",
        "run_at",
        "run_order",
        "sample",
    )

    def __init__(self, family: Family) -> None:
        spec = family.spec
        self.histogram = spec.kind == C.Kind.HISTOGRAM
        # the table names an info family with its _info; a counter's samples add _total
        self.sample = spec.name + ("_total" if spec.kind == C.Kind.COUNTER else "")
        self.bucket = self.sample + "_bucket" if self.histogram else self.sample
        help_, kind = _escape_help(spec.help), _KINDS[spec.kind]
        self.header = f"# HELP {self.sample} {help_}\n# TYPE {self.sample} {kind}\n".encode()
        self.names = spec.labels
        self.order = sorted(range(len(spec.labels)), key=spec.labels.__getitem__)
        # a run varies the family's last label (a histogram's `le`): the others, sorted, and
        # where the run's label falls among them
        if self.histogram:
            base, self.run = spec.labels, "le"
        else:
            base, self.run = spec.labels[:-1], spec.labels[-1] if spec.labels else ""
        self.run_order = sorted(range(len(base)), key=base.__getitem__)
        self.run_at = bisect_left(sorted(base), self.run)

    def template(
        self, labels: tuple[str, ...], last: tuple[str, ...] | None, escaped: _Escaped
    ) -> bytes:
        """The group's lines with `%s` for each value, in the order `fill` gives them."""
        names = self.names
        if last is None:
            if not labels:
                return f"{self.sample} %s\n".encode()
            pairs = ",".join([f'{names[j]}="{escaped[labels[j]]}"' for j in self.order])
            return f"{self.sample}{{{_percent(pairs)}}} %s\n".encode()
        run = [f'{names[j]}="{escaped[labels[j]]}"' for j in self.run_order]
        head, tail = ",".join(run[: self.run_at]), ",".join(run[self.run_at :])
        pre = f'{self.bucket}{{{head}{"," if head else ""}{self.run}="'
        post = f'"{"," if tail else ""}{tail}}} '
        lines = [f"{pre}{escaped[t]}{post}" for t in last]
        if self.histogram:  # then its count and its sum
            every = ",".join(run)
            braces = f"{{{every}}}" if every else ""
            lines += (f"{self.sample}_count{braces} ", f"{self.sample}_sum{braces} ")
        return "".join([f"{_percent(line)}%s\n" for line in lines]).encode()

    def fill(self, template: bytes, values: tuple[float, ...], numbers: _Numbers) -> bytes:
        texts = tuple(map(numbers.__getitem__, values))
        if self.histogram:  # cumulative buckets, the count (the +Inf bucket's), the sum
            texts = texts[:-1] + texts[-2:]
        return template % texts


def _percent(text: str) -> str:
    return text.replace("%", "%%")


class FamilySource(Protocol):
    def read(self) -> Reading: ...

    def families_in_turns(self, reading: Reading) -> Generator[None, None, list[Family]]: ...


class Exposition:
    """The /metrics body: specwatch's families, each group written again only when it
    changed, then any other collector's (the process metrics) as `text_exposition` writes
    them."""

    def __init__(
        self,
        source: FamilySource,
        others: Collector | None = None,
        read: Callable[[], Awaitable[Reading]] | None = None,
    ) -> None:
        """`read`: how `scrape` takes the reading (the source's `read` by default)."""
        self._source = source
        self._others = others
        self._read = read
        self._heads: dict[str, _Head] = {}
        self._kept: dict[str, tuple[list[Group | None], list[bytes], list[bytes]]] = {}
        self._numbers = _Numbers()
        self._turn = asyncio.Lock()  # one scrape at a time: what one keeps, the next reads

    PIECE_BYTES = 1 << 20

    async def scrape(self) -> list[bytes]:
        """The body for /metrics in pieces of about a MiB, on the event loop that owns the
        analysis, in turns of about a millisecond with the loop relaying requests in between:
        the reading (with `read`), then the families and their text, which read only the
        reading and what this object kept. The pieces go out one by one (sidecar/admin.py):
        joining the whole body would hold the loop for one step."""
        async with self._turn:
            reading = self._source.read() if self._read is None else await self._read()
            return await run(self.render_in_turns(reading))

    def render(self, reading: Reading | None = None) -> bytes:
        """The body of `reading` (a new one by default), at once."""
        reading = self._source.read() if reading is None else reading
        return b"".join(finish(self.render_in_turns(reading)))

    def render_in_turns(self, reading: Reading) -> Generator[None, None, list[bytes]]:
        families = yield from self._source.families_in_turns(reading)
        pieces = yield from self.write_in_turns(families)
        if self._others is not None:
            pieces.append(text_exposition(self._others))
        return pieces

    def write(self, families: Iterable[Family]) -> bytes:
        return b"".join(finish(self.write_in_turns(families)))

    def write_in_turns(
        self, families: Iterable[Family], step: float = 0.001
    ) -> Generator[None, None, list[bytes]]:
        """The text of `families` in pieces of about `PIECE_BYTES` (whole families), in turns
        of about `step` seconds. A group equal to the last scrape's at the same place (same
        labels and values: tuples compared in C) takes its text from then; only the others
        are formatted. Slices keep their order from one scrape to the next, so a new one
        shifts the groups after it once."""
        out: list[bytes] = []
        pieces: list[bytes] = []
        size = 0  # of what `out` holds
        escaped, numbers = _Escaped(), self._numbers
        kept, keep = self._kept, {}
        clock = time.perf_counter
        since = clock()
        for family in families:
            if size >= self.PIECE_BYTES:
                pieces.append(b"".join(out))
                out, size = [], 0
            if clock() - since >= step:
                yield
                since = clock()
            name = family.spec.name
            head = self._heads.get(name)
            if head is None:
                head = self._heads[name] = _Head(family)
            out.append(head.header)
            groups = family.groups
            before, templates, texts = kept.get(name, ([], [], []))
            if groups == before:  # in C, the same tuples at once: a quiet family
                keep[name] = (groups, templates, texts)
                out += texts
                size += sum(map(len, texts))
                continue
            n, m = len(groups), len(before)
            if n > m:
                templates = [*templates, *repeat(b"", n - m)]
                texts = [*texts, *repeat(b"", n - m)]
            elif n < m:
                templates, texts = templates[:n], texts[:n]
            else:
                templates, texts = list(templates), list(texts)
            changed = compress(count(), map(ne, groups, before))
            for i in chain(changed, range(m, n)):
                if not i & 63 and clock() - since >= step:
                    yield
                    since = clock()
                group = groups[i]
                if group is None:  # a place kept for a group absent now
                    texts[i] = b""
                    continue
                labels, last, values = group
                old = before[i] if i < m else None
                if old is None or old[0] != labels or old[1] != last:
                    templates[i] = head.template(labels, last, escaped)
                texts[i] = head.fill(templates[i], values, numbers)
            keep[name] = (groups, templates, texts)
            out += texts
            size += sum(map(len, texts))
        self._kept = keep
        pieces.append(b"".join(out))
        return pieces
