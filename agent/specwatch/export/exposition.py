"""The Prometheus text format (0.0.4) of specwatch's families, written for speed.

prometheus-client's `generate_latest` validates and escapes every label name of every sample
(a regex per label): at full cardinality (84k series) that was three quarters of a 2-second
scrape. specwatch's label names are its own constants, valid by construction
(tests/unit/test_exposition.py checks every one), so they are written as they are; label
values are escaped only when they hold a character that needs it. The output is
byte-identical to `generate_latest`'s for what specwatch exports (the test compares them);
a family of a kind this writer does not know, or an OpenMetrics-only sample, sends the whole
scrape through `generate_latest` instead.
"""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

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
        doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        add(f"# HELP {name} {doc}\n# TYPE {name} {kind}\n")
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
