"""Acceptance by how requests asked to decode (greedy, sampled, default) and a cause's numeric
fields, as /status and /metrics give them: mixing greedy and sampled requests in one slice
hides both, so each model's rollup says each one's alpha-hat and their gap."""

from __future__ import annotations

import random

import orjson
from prometheus_client.parser import text_string_to_metric_families
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings

from tests.support import assert_status_valid
from tests.support.analysis import rendered


def request(i: int, sampling: str | None, alpha: float, rng: random.Random) -> RequestRecord:
    accepted = []
    for _ in range(30):
        a = 0
        while a < 3 and rng.random() < alpha:
            a += 1
        accepted.append(a)
    return RequestRecord(
        ts=1.8e9 + i,
        request_id=f"r{i}",
        model="m",
        task="chat",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=100,
        completion_tokens=sum(accepted) + 30,
        spec=SpecDecodeBlock(3, (3,) * 30, tuple(accepted)),
        latency=Latency(tpot=0.02),
        sampling=sampling,
    )


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_greedy_and_sampled_requests_are_told_apart_with_their_gap() -> None:
    rng = random.Random(2)
    analyzer = Analyzer(load_settings(), started=1.8e9)
    for i in range(60):
        mode = (C.Sampling.GREEDY, C.Sampling.SAMPLED, None)[i % 3]
        analyzer.ingest(request(i, mode, 0.8 if mode == C.Sampling.GREEDY else 0.3, rng))
    metrics, status = rendered(analyzer.snapshot(1.8e9 + 61))
    document = orjson.loads(status)
    assert_status_valid(document)
    model = document["sampling"]["m"]
    assert {"greedy", "sampled", "default"} == set(model["modes"])
    greedy, sampled = model["modes"]["greedy"], model["modes"]["sampled"]
    assert 20 == greedy["requests"] == sampled["requests"]
    assert greedy["alpha"]["estimate"] > 0.7 > 0.4 > sampled["alpha"]["estimate"]
    gap = model["greedy_minus_sampled"]
    assert gap["estimate"] == greedy["alpha"]["estimate"] - sampled["alpha"]["estimate"]
    assert gap["lower"] > 0.3  # far apart: the interval says so
    found = samples(metrics)
    run = (("config", C.UNKNOWN_CONFIG), ("track", C.TRACK_STABLE))
    labels = tuple(sorted((*run, ("model", "m"), ("sampling", "greedy"))))
    assert 20 == found[("specwatch_sampling_requests_total", labels)]
    assert greedy["accepted"] == found[("specwatch_sampling_accepted_tokens_total", labels)]
    assert greedy["trials"] == found[("specwatch_sampling_trials_total", labels)]


def test_a_causes_numeric_fields_are_series_of_their_own() -> None:
    rng = random.Random(3)
    analyzer = Analyzer(load_settings(), started=1.8e9)
    for i in range(40):  # 2% acceptance from the first request: draft_mismatch
        analyzer.ingest(request(i, C.Sampling.GREEDY, 0.02, rng))
    metrics, status = rendered(analyzer.snapshot(1.8e9 + 41))
    (rollup,) = orjson.loads(status)["models"]
    (cause,) = [c for c in rollup["causes"] if c["kind"] == C.CauseKind.DRAFT_MISMATCH]
    found = samples(metrics)
    details = {
        dict(labels)["field"]: value
        for (name, labels), value in found.items()
        if name == "specwatch_cause_detail"
        and dict(labels)["kind"] == C.CauseKind.DRAFT_MISMATCH
        and dict(labels)["ctx_bucket"] == C.ALL
    }
    assert {"alpha", "alpha_first", "requests"} == set(details)  # numbers only, no text
    assert details["alpha_first"] == cause["alpha_first"]
    assert details["requests"] == 40
