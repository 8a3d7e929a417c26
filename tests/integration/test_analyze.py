"""`specwatch analyze` and `compare` as a user runs them (the CLI, DuckDB underneath), held
against the sidecar itself: the same records replayed through the live analysis must give the
same counts exactly and the same bounds (to 1e-9), on the real vLLM captures and on simulated
logs with variable K, steps that draft nothing and requests that cross ctx buckets."""

from __future__ import annotations

import base64
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import orjson
import pytest
from specwatch import conventions as C
from specwatch.analysis.compare.alpha import compare_models
from specwatch.analysis.compare.goodput import compare_tpot
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import Interval, SliceStats
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.replay import replay
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.engines.vllm.response import parse_response_object
from specwatch.settings import Settings, load_settings
from specwatch.store.cyclelog import to_line

from tests.support import ROOT

CAPTURES = ROOT / "tests" / "fixtures" / "vllm-0.32.0-cpu"
BUCKETS = "64,160,320"


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "specwatch", *args], capture_output=True, text=True, timeout=300
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def captured_records() -> list[RequestRecord]:
    """The non-streamed requests of both real captures (draft model and ngram), as the
    sidecar records them: vLLM's own per-request block and usage."""
    out: list[RequestRecord] = []
    for name in ("draft_requests.jsonl", "ngram_requests.jsonl"):
        for i, line in enumerate((CAPTURES / name).read_text().splitlines()):
            captured = json.loads(line)
            if "body_b64" not in captured or captured["status"] != 200:
                continue
            parsed = parse_response_object(orjson.loads(base64.b64decode(captured["body_b64"])))
            assert parsed.spec is not None
            assert parsed.prompt_tokens is not None
            out.append(
                RequestRecord(
                    ts=1_700_000_000.0 + len(out),
                    request_id=f"{name}-{i}",
                    model=name.split("_")[0],
                    task=captured["kind"],
                    outcome=C.Outcome.OBSERVED,
                    prompt_tokens=parsed.prompt_tokens,
                    completion_tokens=parsed.completion_tokens,
                    spec=parsed.spec,
                    latency=parsed.latency,
                    in_flight=1 + i % 9,
                )
            )
    return out


def simulated_records(seed: int, n: int, alpha: float = 0.7, **fields: Any) -> list[RequestRecord]:
    """Requests of every shape the sidecar counts: one K (up to 9, above what fleet/sql.py
    packs in one row) or K varying along the request, steps that drafted nothing, no step at
    all, A/B baseline requests; prompts spread over the buckets so that many requests cross
    one; acceptance drawn per request around `alpha` (overdispersed, as real traffic)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.choice((2, 3, 5, 9))
        steps = rng.randrange(0, 40)
        varying = rng.random() < 0.3
        drafted = tuple((rng.choice((0, 1, 2, 3, 5)) if varying else k) for _ in range(steps))
        own = min(0.98, max(0.02, rng.gauss(alpha, 0.12)))
        accepted = tuple(
            next(j for j in range(d + 1) if j == d or rng.random() > own) for d in drafted
        )
        baseline = rng.random() < 0.05
        out.append(
            RequestRecord(
                ts=1_700_000_000.0 + i * 7.0,
                request_id=f"r{seed}-{i}",
                model=rng.choice(("a", "b")),
                task=rng.choice(("code", "chat")),
                outcome=C.Outcome.OBSERVED,
                prompt_tokens=rng.randrange(0, 700),
                completion_tokens=steps * 2 + 1,
                spec=None if baseline else SpecDecodeBlock(k, drafted, accepted),
                latency=Latency(tpot=rng.uniform(0.01, 0.03)),
                variant=C.VARIANT_BASELINE if baseline else C.VARIANT_SPEC,
                in_flight=rng.randrange(1, 40),
                **fields,
            )
        )  # fmt: skip
    return out


def write(path: Path, records: list[RequestRecord], track: str | None = None) -> Path:
    path.write_bytes(b"".join(to_line(record, track) for record in records))
    return path


def replayed(records: list[RequestRecord], settings: Settings) -> dict[tuple[str, ...], Counts]:
    """The live analysis' since_start counts: per slice, and per model (key of one)."""
    analyzer, end = replay(records, settings)
    snapshot = analyzer.snapshot(end)
    out: dict[tuple[str, ...], Counts] = {
        (v.key.model, v.key.ctx_bucket, v.key.task): v.since_start for v in snapshot.slices
    }
    out.update({(v.key.model,): v.since_start for v in snapshot.rollups})
    return out


def same_interval(got: dict[str, Any] | None, want: Interval | None) -> None:
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        for name in ("estimate", "lower", "upper"):
            assert got[name] == pytest.approx(getattr(want, name), abs=1e-9), name


def assert_exact(document: dict[str, Any], want: dict[tuple[str, ...], Counts], by: str) -> None:
    """Every group of analyze's document against the replayed counts of its key."""
    names = by.split(",")
    groups = {tuple(g[name] for name in names): g for g in document["groups"]}
    expected = {key: counts for key, counts in want.items() if len(key) == len(names)}
    assert set(groups) == set(expected)
    for key, counts in expected.items():
        got = groups[key]
        assert {name: got[name] for name in counts.as_dict()} == counts.as_dict(), key
        stats = SliceStats.of(counts, 0.95)
        same_interval(got["alpha"], stats.alpha)
        same_interval(got["rate_interval"], stats.rate)
        same_interval(got["tau_interval"], stats.tau)
        assert got["per_position"] == pytest.approx(list(stats.per_position), abs=1e-12)


def analyze(*args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(run("analyze", "--json", "--quiet", *args).stdout)
    return document


def test_analyze_equals_replay_on_the_real_vllm_captures(tmp_path: Path) -> None:
    records = captured_records()
    assert len(records) >= 100
    log = write(tmp_path / "cycles.jsonl", records)
    want = replayed(records, load_settings(ctx_buckets=BUCKETS))
    crossing = sum(1 for key in want if len(key) == 3) > 2 * 2  # the captures span buckets
    assert crossing
    for by in ("model,ctx_bucket,task", "model"):
        assert_exact(analyze(str(log), "--ctx-buckets", BUCKETS, "--by", by), want, by)
    # and black box: replay's own JSON says the same since_start counts
    status = json.loads(run("replay", "--json", "--ctx-buckets", BUCKETS, str(log)).stdout)
    document = analyze(str(log), "--ctx-buckets", BUCKETS)
    groups = {(g["model"], g["ctx_bucket"], g["task"]): g for g in document["groups"]}
    for view in status["slices"]:
        got = groups[view["model"], view["ctx_bucket"], view["task"]]
        assert {name: got[name] for name in view["since_start"]} == view["since_start"]


def test_analyze_reads_a_directory_of_rotated_gzip_and_parquet_files_exactly(
    tmp_path: Path,
) -> None:
    """Several pods' logs: plain, rotated and gzipped (FILE.1.gz), and converted to Parquet;
    a directory and a glob read alike, every record once."""
    records = simulated_records(1, 3000)
    fleet = tmp_path / "fleet"
    (fleet / "pod-a").mkdir(parents=True)
    (fleet / "pod-b").mkdir()
    write(fleet / "pod-a" / "cycles.jsonl", records[:1000], track="stable")
    rotated = fleet / "pod-a" / "cycles.jsonl.1.gz"
    rotated.write_bytes(gzip.compress(b"".join(to_line(r) for r in records[1000:2000])))
    scratch = write(tmp_path / "b.jsonl", records[2000:])
    parquet = fleet / "pod-b" / "cycles.parquet"
    duckdb.sql(
        f"COPY (SELECT * FROM read_json('{scratch}', format = 'newline_delimited')) "
        f"TO '{parquet}' (FORMAT parquet)"
    )
    want = replayed(records, load_settings(ctx_buckets=BUCKETS))
    for by in ("model,ctx_bucket,task", "model"):
        document = analyze(str(fleet), "--ctx-buckets", BUCKETS, "--by", by)
        assert_exact(document, want, by)
        assert document["files"] == 3
    globbed = analyze(str(fleet / "**" / "cycles.*"), "--ctx-buckets", BUCKETS)
    assert_exact(globbed, want, "model,ctx_bucket,task")
    lines = globbed["lines"]
    baseline = sum(1 for r in records if r.variant == C.VARIANT_BASELINE)
    empty = sum(1 for r in records if r.spec is not None and not r.spec.steps)
    assert (lines["baseline"], lines["empty"], lines["bad"]) == (baseline, empty, 0)
    assert lines["spec"] == len(records) - baseline - empty


def test_bad_lines_are_counted_and_said_and_the_good_ones_all_counted(tmp_path: Path) -> None:
    records = simulated_records(2, 400)
    good = [to_line(r) for r in records]
    bad = [
        b"not json at all\n",
        b'{"v": 1, "ts": "yesterday", "request_id": "x"}\n',
        b'{"v":1,"ts":5.0,"request_id":"y","model":"a","task":"code","prompt_tokens":3,'
        b'"completion_tokens":4,"num_spec_tokens":3,"per_step_drafted":[3],'
        b'"per_step_accepted":[4]}\n',  # accepted more than it drafted
        b'{"v":1,"ts":5.0,"request_id":"z","model":"a","task":"code","prompt_tokens":3,'
        b'"completion_tokens":4,"num_spec_tokens":3,"per_step_drafted":[3,3],'
        b'"per_step_accepted":[1]}\n',  # the arrays disagree
    ]
    config = b'{"v": 1, "config": {"id": "abc", "method": "ngram"}}\n'
    log = tmp_path / "mixed.jsonl"
    log.write_bytes(config + b"".join(good[:200]) + b"".join(bad) + b"".join(good[200:]))
    done = run("analyze", "--json", "--quiet", "--ctx-buckets", BUCKETS, str(log))
    document = json.loads(done.stdout)
    assert document["lines"]["bad"] == len(bad)
    assert document["lines"]["config"] == 1
    assert f"{len(bad)} line(s) are not cycle-log request lines" in done.stderr
    assert_exact(
        document, replayed(records, load_settings(ctx_buckets=BUCKETS)), "model,ctx_bucket,task"
    )


def test_since_and_until_keep_the_range_and_count_the_rest(tmp_path: Path) -> None:
    records = simulated_records(3, 1000)
    log = write(tmp_path / "cycles.jsonl", records)
    since, until = records[200].ts, records[700].ts
    kept = [r for r in records if since <= r.ts < until]
    document = analyze(
        str(log), "--ctx-buckets", BUCKETS, "--since", str(since), "--until", str(until)
    )
    assert_exact(
        document, replayed(kept, load_settings(ctx_buckets=BUCKETS)), "model,ctx_bucket,task"
    )
    counted = [r for r in records if r.variant != C.VARIANT_BASELINE]
    assert document["lines"]["outside"] == sum(1 for r in counted if not since <= r.ts < until)


def test_groups_by_config_track_load_and_day_are_the_records_of_each(tmp_path: Path) -> None:
    """Each dimension's groups hold exactly the records with that value (replayed apart)."""
    first = simulated_records(4, 600, config="cfg-1")
    second = simulated_records(5, 600, alpha=0.5, config="cfg-2")
    log = tmp_path / "cycles.jsonl"
    log.write_bytes(
        b"".join(to_line(r, "stable") for r in first)
        + b"".join(to_line(r, "canary") for r in second)
    )
    settings = load_settings(ctx_buckets=BUCKETS)
    document = analyze(str(log), "--ctx-buckets", BUCKETS, "--by", "config,track,model")
    for config, track, part in (("cfg-1", "stable", first), ("cfg-2", "canary", second)):
        want = replayed(part, settings)
        for group in (g for g in document["groups"] if g["config"] == config):
            assert group["track"] == track
            assert group["trials"] == want[(group["model"],)].trials
    edges = settings.load.batch_edges
    by_load = analyze(str(log), "--by", "load")
    for group in by_load["groups"]:
        lo, hi = _load_range(group["load"])
        inside = [
            r for r in first + second
            if r.spec is not None and r.spec.steps and r.in_flight is not None
            and lo <= r.in_flight <= hi
        ]  # fmt: skip
        assert group["spec_steps"] == sum(r.spec.steps for r in inside if r.spec), group["load"]
    assert len(by_load["groups"]) <= len(edges) + 1
    days = analyze(str(log), "--by", "day")["groups"]
    assert [g["day"] for g in days] == ["2023-11-14"]


def _load_range(label: str) -> tuple[int, float]:
    """A load bucket's label (`1`, `2-4`, `65+`) as its inclusive range."""
    if label.endswith("+"):
        return int(label[:-1]), float("inf")
    lo, _, hi = label.partition("-")
    return int(lo), int(hi or lo)


def test_csv_and_parquet_hold_the_json_groups(tmp_path: Path) -> None:
    log = write(tmp_path / "cycles.jsonl", simulated_records(6, 500))
    document = analyze(str(log))
    run("analyze", "--quiet", str(log), "--csv", str(tmp_path / "g.csv"))
    run("analyze", "--quiet", str(log), "--parquet", str(tmp_path / "g.parquet"))
    rows = (tmp_path / "g.csv").read_text().splitlines()
    assert len(rows) == 1 + len(document["groups"])
    header = rows[0].split(",")
    assert header[:4] == ["model", "ctx_bucket", "task", "requests"]
    table = (
        duckdb.connect()
        .execute(
            f"SELECT model, ctx_bucket, task, trials, alpha_lower FROM '{tmp_path / 'g.parquet'}'"
        )
        .fetchall()
    )
    want = {(g["model"], g["ctx_bucket"], g["task"]): g for g in document["groups"]}
    assert len(table) == len(want)
    for model, ctx, task, trials, lower in table:
        assert trials == want[model, ctx, task]["trials"]
        assert lower == pytest.approx(want[model, ctx, task]["alpha"]["lower"], abs=1e-12)


def test_the_k_table_is_advises_over_the_same_log(tmp_path: Path) -> None:
    log = write(tmp_path / "cycles.jsonl", simulated_records(7, 3000))
    advised = json.loads(run("advise", "--json", "--cycle-log", str(log)).stdout)["batch_size"]
    tables = analyze(str(log), "--k-table")["k_tables"]
    assert [t["model"] for t in tables] == [t["model"] for t in advised]
    for got, want in zip(tables, advised, strict=True):
        assert (
            got["num_speculative_tokens_per_batch_size"]
            == want["num_speculative_tokens_per_batch_size"]
        )
        assert got["cost_ratio"] == pytest.approx(want["cost_ratio"], rel=1e-9)
        for mine, theirs in zip(got["ranges"], want["ranges"], strict=True):
            assert mine["spec_requests"] == theirs["spec_requests"]
            assert mine["baseline_requests"] == theirs["baseline_requests"]
            for name in ("gain", "lower", "upper"):
                assert mine[name] == pytest.approx(theirs[name], rel=1e-9)


def test_compare_finds_the_worse_slice_and_no_other(tmp_path: Path) -> None:
    """B accepts 0.15 less in one task of one model: that slice (and its model) is `worse`,
    the unchanged ones never `better` or `worse`; the same through --split track of one set,
    and the same as compare_models on the replayed sums (one implementation)."""
    settings = load_settings(ctx_buckets=BUCKETS)
    a = simulated_records(8, 4000)
    b = [
        r for r in simulated_records(9, 4000)
        if not (r.model == "a" and r.task == "code")
    ] + [
        r for r in simulated_records(10, 4000, alpha=0.55)
        if r.model == "a" and r.task == "code"
    ]  # fmt: skip
    side_a, side_b = (
        write(tmp_path / "a.jsonl", a, "stable"),
        write(tmp_path / "b.jsonl", b, "canary"),
    )
    document = json.loads(
        run("compare", "--json", "--quiet", "--by", "model,task", str(side_a), str(side_b)).stdout
    )
    verdicts = {(row["model"], row["task"]): row["verdict"] for row in document["slices"]}
    assert verdicts.pop(("a", "code")) == "worse"
    assert set(verdicts.values()) <= {"same", "insufficient"}
    models = {row["model"]: row for row in document["models"]}
    assert models["a"]["verdict"] == "worse"
    assert models["b"]["verdict"] != "worse"
    both = tmp_path / "both.jsonl"
    both.write_bytes(side_a.read_bytes() + side_b.read_bytes())
    split = json.loads(
        run("compare", "--json", "--quiet", "--by", "model,task", str(both), "--split", "track",
            "--a", "stable", "--b", "canary").stdout
    )  # fmt: skip
    assert split["slices"] == document["slices"]
    assert split["models"] == document["models"]
    # one implementation: the replayed sums through the live comparison's code
    sums_a = {k: Sums.of(c, "alpha") for k, c in _by_task(a, settings).items()}
    sums_b = {k: Sums.of(c, "alpha") for k, c in _by_task(b, settings).items()}
    pairs = [(key, sums_a[key], sums_b[key]) for key in sorted(sums_a)]
    finer = [p for p in pairs if len(p[0]) == 2]
    rollups = [p for p in pairs if len(p[0]) == 1]
    cfg = settings.canary
    slices, _ = compare_models(rollups, finer, cfg.confidence, cfg.margin, 1000, 30)
    for row, mine in zip(slices, document["slices"], strict=True):
        assert row.verdict == mine["verdict"]
        assert row.difference is not None
        assert mine["difference"] is not None
        assert mine["difference"]["lower"] == pytest.approx(row.difference.lower, abs=1e-9)


def _by_task(records: list[RequestRecord], settings: Settings) -> dict[tuple[str, ...], Counts]:
    """Counts per (model, task) and per model, of whole requests, as the sidecar counts them."""
    positions = settings.limits.max_position
    out: dict[tuple[str, ...], Counts] = {}
    for record in records:
        if record.spec is None or not record.spec.steps or record.variant == C.VARIANT_BASELINE:
            continue
        one = Counts.of_request(record.spec.drafted, record.spec.accepted, positions)
        for key in ((record.model,), (record.model, record.task)):
            out.setdefault(key, Counts(positions)).merge(one)
    return out


def test_usage_errors_are_said_plainly(tmp_path: Path) -> None:
    log = write(tmp_path / "cycles.jsonl", simulated_records(11, 50))
    done = run("analyze", str(log), "--by", "model,colour", check=False)
    assert done.returncode == 2
    assert "--by 'model,colour'" in done.stderr
    done = run("analyze", str(tmp_path / "nothing-*.jsonl"), check=False)
    assert done.returncode == 2
    assert "nothing matches" in done.stderr
    done = run("analyze", str(log), "--since", "last tuesday", check=False)
    assert done.returncode == 2
    assert "neither unix seconds" in done.stderr
    done = run("compare", "--quiet", str(log), "--split", "track", check=False)
    assert done.returncode == 2
    assert "--split track: the logs hold stable" in done.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = run("analyze", "--quiet", str(empty), check=False)
    assert done.returncode == 1
    assert "no speculative request" in done.stderr


def test_compare_keeps_one_family_per_model_however_many_models_it_compares(
    tmp_path: Path,
) -> None:
    """Model a's slices and rollup get the same bounds whether a is compared alone or beside
    model b in one invocation: the guard is per model (its slices and its rollup)."""
    a = [r for r in simulated_records(12, 3000) if r.model == "a"]
    b = [r for r in simulated_records(13, 3000) if r.model == "a"]
    both_a = simulated_records(12, 3000)
    both_b = simulated_records(13, 3000)

    def compared(left: list[RequestRecord], right: list[RequestRecord], name: str) -> Any:
        paths = [
            write(tmp_path / f"{name}-{i}.jsonl", side) for i, side in enumerate((left, right))
        ]
        args = ("compare", "--json", "--quiet", "--by", "model,task", *map(str, paths))
        return json.loads(run(*args).stdout)

    alone, fleet = compared(a, b, "alone"), compared(both_a, both_b, "fleet")
    mine = [row for row in fleet["slices"] if row["model"] == "a"]
    assert alone["slices"] == mine
    assert [m for m in fleet["models"] if m["model"] == "a"] == alone["models"]
    assert {row["model"] for row in fleet["slices"]} == {"a", "b"}


def test_compare_tpot_is_the_live_goodput_comparison_over_the_same_logs(tmp_path: Path) -> None:
    """B decodes 20% slower per output token in model a only: a's slices and a are `slower`,
    b's never `faster` or `slower`; the ratios equal compare_tpot over the sums the live
    analysis keeps (replay's since-start goodput cells); `--metric alpha` leaves goodput out,
    `--metric tpot` acceptance."""
    settings = load_settings(ctx_buckets=BUCKETS)

    def slower(records: list[RequestRecord]) -> list[RequestRecord]:
        return [
            msgspec.structs.replace(r, latency=Latency(tpot=(r.latency.tpot or 0) * 1.2))
            if r.model == "a"
            else r
            for r in records
        ]

    a, b = simulated_records(8, 4000), slower(simulated_records(9, 4000))
    side_a, side_b = write(tmp_path / "a.jsonl", a), write(tmp_path / "b.jsonl", b)
    by = ("--by", "model,task")
    document = json.loads(run("compare", "--json", "--quiet", *by, str(side_a), str(side_b)).stdout)
    assert document["metrics"] == ["alpha", "tpot"]
    tpot = document["tpot"]
    verdicts = {(r["model"], r.get("task")): r["verdict"] for r in tpot["slices"] + tpot["models"]}
    assert [verdicts.pop(key) for key in (("a", "chat"), ("a", "code"), ("a", None))] == [
        "slower"
    ] * 3
    assert set(verdicts.values()) <= {"same", "insufficient"}  # b unchanged
    tpot_verdicts = {row["model"]: row["tpot_verdict"] for row in document["models"]}
    assert tpot_verdicts == {row["model"]: row["verdict"] for row in tpot["models"]}

    def cells(records: list[RequestRecord]) -> dict[tuple[str, ...], Sums]:
        analyzer, _ = replay(records, settings)
        out: dict[tuple[str, ...], Sums] = {}
        for (model, _ctx, task, load), sums in analyzer.since_start_timed().items():
            out.setdefault((model, task, load), DecodeSums()).merge(sums)
        return out

    cfg = settings.canary
    slices, models = compare_tpot(
        cells(a), cells(b), cfg.confidence, cfg.tpot_margin, cfg.tpot_min_cell_requests, 30
    )
    for row, mine in zip([*slices, *models], [*tpot["slices"], *tpot["models"]], strict=True):
        assert row.ratio is not None
        assert mine["ratio"]["lower"] == pytest.approx(row.ratio.lower, rel=1e-9)
        assert mine["ratio"]["upper"] == pytest.approx(row.ratio.upper, rel=1e-9)
        assert mine["a"]["requests"] == row.before.requests
    only_alpha = json.loads(
        run(
            "compare", "--json", "--quiet", "--metric", "alpha", *by, str(side_a), str(side_b)
        ).stdout
    )
    assert "tpot" not in only_alpha
    assert only_alpha["slices"] == [{**row, "tpot_verdict": None} for row in document["slices"]]
    only_tpot = json.loads(
        run(
            "compare", "--json", "--quiet", "--metric", "tpot", *by, str(side_a), str(side_b)
        ).stdout
    )
    assert "slices" not in only_tpot
    assert only_tpot["tpot"] == tpot
    both = tmp_path / "both.jsonl"
    both.write_bytes(write(tmp_path / "sa", a, "stable").read_bytes()
                     + write(tmp_path / "sb", b, "canary").read_bytes())  # fmt: skip
    split = json.loads(
        run("compare", "--json", "--quiet", *by, str(both), "--split", "track",
            "--a", "stable", "--b", "canary").stdout
    )  # fmt: skip
    for mine, theirs in zip(split["tpot"]["slices"] + split["tpot"]["models"],
                            tpot["slices"] + tpot["models"], strict=True):  # fmt: skip
        assert mine["verdict"] == theirs["verdict"]
        assert mine["ratio"] == pytest.approx(theirs["ratio"], rel=1e-9)  # summed in another order


def test_analyze_tpot_is_the_sidecars_goodput_per_slice(tmp_path: Path) -> None:
    """`analyze --tpot`: each group's decode time per output token and its interval are the
    live analysis' since-start goodput of the slice (replay), request for request."""
    settings = load_settings(ctx_buckets=BUCKETS)
    records = simulated_records(12, 3000)
    log = write(tmp_path / "a.jsonl", records)
    document = analyze("--tpot", "--ctx-buckets", BUCKETS, str(log))
    analyzer, end = replay(records, settings)
    views = analyzer.snapshot(end).goodput
    timed = [g for g in document["groups"] if g["tpot_requests"]]
    assert len(timed) >= 10
    for group in document["groups"]:
        view = views.get((group["model"], group["ctx_bucket"], group["task"]))
        if view is None:
            assert group["tpot_requests"] == 0 or group.get("tpot_seconds") is None
            continue
        assert group["tpot_requests"] == view.requests_since_start
        same_interval(group["tpot_interval"], view.tpot_since_start)
    assert "tpot_seconds" not in analyze(str(log))["groups"][0]  # only when asked for
    # black box on the real captures: replay --json's goodput is analyze --tpot's
    captures = write(tmp_path / "captures.jsonl", captured_records())
    status = json.loads(run("replay", "--json", "--ctx-buckets", BUCKETS, str(captures)).stdout)
    document = analyze("--tpot", "--ctx-buckets", BUCKETS, str(captures))
    groups = {(g["model"], g["ctx_bucket"], g["task"]): g for g in document["groups"]}
    compared = 0
    for view in status["slices"]:
        goodput = view["goodput"]
        if goodput is None:
            continue
        got = groups[view["model"], view["ctx_bucket"], view["task"]]
        assert got["tpot_requests"] == goodput["since_start"]["requests"]
        assert got["tpot_seconds"] == pytest.approx(goodput["since_start"]["tpot_seconds"])
        compared += 1
    assert compared >= 3
