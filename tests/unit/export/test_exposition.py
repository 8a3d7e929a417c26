"""export/exposition.py writes what prometheus-client's generate_latest writes, byte for byte."""

from __future__ import annotations

import math
import re
from collections.abc import Generator, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
    StateSetMetricFamily,
)
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.core.health import Health
from specwatch.core.histogram import Histogram
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition, text_exposition
from specwatch.export.families import Family
from specwatch.export.reading import Reading
from specwatch.settings import load_settings


class Families:
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def registry_of(*families: Metric) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(list(families)))
    return registry


def test_every_kind_escape_and_number_as_generate_latest_writes_them() -> None:
    counter = CounterMetricFamily("x_requests", "help with \\ and\nnewline", labels=["b", "a"])
    for value in ("plain", 'quo"te', "back\\slash", "new\nline", "ünï"):
        counter.add_metric([value, "z"], 3)
    gauge = GaugeMetricFamily("x_ratio", "a gauge", labels=["model"])
    numbers = (0.1, 1e-9, 12345678.5, 1e22, math.inf, -math.inf, math.nan, 7, 0.0, -0.0,
               # counts as ints, around where Go's form starts (a count's fast path)
               0, 1, 999_999, 1_000_000, 1_234_567, 2**53 + 1, -5, -999_999)  # fmt: skip
    for i, number in enumerate(numbers):
        gauge.add_metric([f"m{i}"], number)
    histogram = HistogramMetricFamily("x_seconds", "a histogram", labels=["model"])
    histogram.add_metric(["m"], buckets=[("0.1", 2), ("1.0", 5), ("+Inf", 6)], sum_value=3.5)
    info = InfoMetricFamily("x_build", "build info")
    info.add_metric([], {"version": "1.0"})
    registry = registry_of(counter, gauge, histogram, info)
    assert generate_latest(registry) == text_exposition(registry)


def test_an_unknown_kind_goes_through_generate_latest() -> None:
    states = StateSetMetricFamily("x_state", "a state set", labels=["model"])
    states.add_metric(["m"], {"on": True, "off": False})
    registry = registry_of(states)
    assert generate_latest(registry) == text_exposition(registry)


def test_every_label_name_of_the_metric_table_is_valid_as_written() -> None:
    """The writer does not validate label names: the table's must need no escaping."""
    names = {label for metric in C.METRICS.values() for label in metric.labels}
    assert names
    assert all(re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name) for name in names)


def feed(analyzer: Analyzer, first: int, last: int, models: int = 3) -> None:
    """Requests first..last-1, half a second apart: speculative and (every 5th) baseline."""
    for i in range(first, last):
        baseline = i % 5 == 0
        analyzer.ingest(
            RequestRecord(
                ts=i * 0.5, request_id=str(i), model=f"m{i % models}",
                task=("code", "chat")[i % 2], outcome=C.Outcome.OBSERVED,
                prompt_tokens=100 + 50 * (i % 200), completion_tokens=40,
                spec=None if baseline else SpecDecodeBlock(4, (4, 4, 2, 4), (4, 1, 2, 0)),
                latency=Latency(ttft=0.05, tpot=0.01 + i * 1e-5, e2e=0.5),
                variant=C.VARIANT_BASELINE if baseline else C.VARIANT_SPEC, in_flight=1 + i % 40,
            )
        )  # fmt: skip


def test_the_sidecars_own_families_come_out_identical() -> None:
    settings = load_settings()
    analyzer = Analyzer(settings, started=0.0)
    feed(analyzer, 0, 200)
    analyzer.evaluate(100.0)
    health = Health()
    health.parse_error("sse", "truncated_stream")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        SpecwatchCollector(lambda: Reading(analyzer.snapshot(100.0), health.snapshot()))
    )
    body = text_exposition(registry)
    assert b"specwatch_load_gain_ratio{" in body

    # variable K: each speculative request drafted 4, 4, 2, 4 and accepted 4, 1, 2, 0
    run = {"config": C.UNKNOWN_CONFIG, "track": C.TRACK_STABLE}

    def total(name: str, length: str) -> float:
        values = [
            registry.get_sample_value(name, {"model": f"m{m}", "draft_length": length, **run})
            for m in range(3)
        ]
        return sum(v for v in values if v is not None)

    assert (480, 160) == (total("specwatch_draft_length_steps_total", "4"),
                          total("specwatch_draft_length_steps_total", "2"))  # fmt: skip
    assert (800, 320) == (total("specwatch_draft_length_accepted_tokens_total", "4"),
                          total("specwatch_draft_length_accepted_tokens_total", "2"))  # fmt: skip
    assert generate_latest(registry) == body


def test_the_kept_writer_rewrites_what_changed_and_only_that() -> None:
    """Scrape after scrape, with traffic, quiet spells and windows sliding in between, the
    writer that keeps unchanged groups' text, fed by a collector that keeps a quiet slice's
    groups, writes what generate_latest writes of a new collector's families."""
    analyzer = Analyzer(load_settings(), started=0.0)
    health = Health()
    clock = {"now": 0.0}

    def read() -> Reading:
        return Reading(analyzer.snapshot(clock["now"]), health.snapshot())

    exposition = Exposition(SpecwatchCollector(read))
    bodies = []
    for first, last, now in ((0, 200, 100.0), (200, 260, 130.0), (260, 260, 130.0),
                             (260, 263, 131.5), (263, 263, 900.0)):  # fmt: skip
        feed(analyzer, first, last, models=4 if first else 3)  # a model appears midway
        health.parse_error("sse", f"reason-{first % 3}")
        health.proxy_overhead.observe(first * 1e-5)
        analyzer.evaluate(now)
        clock["now"] = now
        body = exposition.render()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(SpecwatchCollector(read))
        assert generate_latest(registry) == body, (first, last, now)
        bodies.append(body)
    assert len(set(bodies)) == len(bodies)  # every round changed something


class NoFamilies:
    def read(self) -> Reading:
        raise AssertionError("not read: families are written directly")

    def families_in_turns(self, reading: Reading) -> Generator[None, None, list[Family]]:
        yield
        return []


def test_the_writers_kept_numbers_and_templates_write_each_value_as_it_is() -> None:
    """The writer keeps the text of values it has seen and each group's lines as a template:
    values equal as numbers but written differently (0 and -0.0), NaN, a count past Go's
    short form, and label values holding the template's own `%` come out as
    generate_latest writes them, scrape after scrape. (A group equal as numbers to the one at
    its place last time keeps its text, 0.0 for -0.0, as Exposition says: not done here.)"""
    rounds = (
        (0, -0.0, 1, 1.0, 2.5),
        (1_000_000, math.nan, -0.0, 0, 3.5),
        (-0.0, 2.5, 999_999, math.nan, 1e22),
    )
    exposition = Exposition(NoFamilies())
    for values in rounds:
        gauge, histogram = Family(C.ACCEPTANCE_RATE), Family(C.TTFT_SECONDS)
        for i, value in enumerate(values):
            gauge.add((f"m{i}", "100%s", "%d%%", "c%", "stable"), value)
        ttft = Histogram(C.TTFT_BUCKETS)
        for value in values:
            ttft.observe(abs(value) if value == value else value)
        histogram.add_histogram(("m%", "%s", "chat", "spec", "%x", "canary"), ttft)
        expected = generate_latest(registry_of(gauge.to_metric(), histogram.to_metric()))
        assert exposition.write([gauge, histogram]) == expected, values
