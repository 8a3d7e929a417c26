"""The per-model families of a reading: the K advice and the traffic mix, the load table,
vLLM's own view (its counters, coverage) and the latency objectives, each labelled with the
run's config and track."""

from __future__ import annotations

from collections.abc import Iterator

from specwatch import conventions as C
from specwatch.analysis.counting.stats import Interval
from specwatch.analysis.views import Snapshot
from specwatch.export.families import Family, bounds

Run = tuple[str, str]  # the config and track of the process: on every series of the analysis


def advice_and_mix(snapshot: Snapshot, run: Run) -> Iterator[Family]:
    advised = Family(C.ADVISED_NUM_SPECULATIVE_TOKENS)
    for view in snapshot.rollups:
        if view.advice is not None:
            advised.add((view.key.model, *run), view.advice.best_k)
    yield advised
    psi, change = Family(C.TRAFFIC_MIX_PSI), Family(C.ACCEPTANCE_CHANGE)
    for model, mix in (snapshot.mix or {}).items():
        psi.add((model, *run, C.Label.CTX_BUCKET), mix.psi_ctx_bucket)
        psi.add((model, *run, C.Label.TASK), mix.psi_task)
        d = mix.decomposition
        change.add((model, *run, C.MixPart.MIX), d.mix)
        change.add((model, *run, C.MixPart.RATE), d.rate)
        change.add((model, *run, C.MixPart.TOTAL), d.total)
    yield from (psi, change)


def by_load(snapshot: Snapshot, run: Run) -> Iterator[Family]:
    """Model x batch-size bucket: counters since the start, the K table, windowed gains."""
    accepted, trials = Family(C.LOAD_ACCEPTED_TOKENS), Family(C.LOAD_ACCEPTANCE_TRIALS)
    seconds, tokens = Family(C.LOAD_DECODE_SECONDS), Family(C.LOAD_DECODE_TOKENS)
    for cell in snapshot.load_cells:
        labels = (cell.model, *run, cell.load)
        accepted.add(labels, cell.accepted)
        trials.add(labels, cell.trials)
        for variant, value in cell.decode_seconds.items():
            seconds.add((*labels, variant), value)
            tokens.add((*labels, variant), cell.decode_tokens[variant])
    yield from (accepted, trials, seconds, tokens)
    advised = Family(C.LOAD_ADVISED_K)
    for table in snapshot.load:
        for row in table.ranges:
            advised.add((table.model, *run, row.label), row.k)
    gains = Family(C.LOAD_GAIN_RATIO)
    for table in snapshot.load_window:
        for row in table.ranges:
            if row.method is not None and row.gain is not None:
                lower = row.gain if row.lower is None else row.lower
                upper = row.gain if row.upper is None else row.upper
                interval = Interval(row.gain, lower, upper)
                bounds(gains, (table.model, *run, row.label, row.method), interval)
    yield from (advised, gains)


def vllm(snapshot: Snapshot, run: Run) -> Iterator[Family]:
    coverage = Family(C.COVERAGE_RATIO)
    alpha, rate = Family(C.VLLM_ACCEPTANCE_ALPHA), Family(C.VLLM_ACCEPTANCE_RATE)
    running = Family(C.VLLM_RUNNING)
    for view in snapshot.engine:
        model = (view.model, *run)
        if view.coverage is not None:
            coverage.add(model, view.coverage)
        if view.running is not None:
            running.add(model, view.running)
        if view.stats.alpha is not None:
            bounds(alpha, model, view.stats.alpha)
        if view.stats.rate is not None:
            rate.add(model, view.stats.rate.estimate)
    yield from (coverage, alpha, rate, running)
    resets = Family(C.VLLM_COUNTER_RESETS)
    resets.add((), snapshot.counter_resets)
    yield resets
    totals = snapshot.vllm_log
    if totals is not None:
        for name, value in (
            (C.VLLM_LOG_SPEC_LINES, totals.lines),
            (C.VLLM_LOG_ACCEPTED_TOKENS, totals.accepted),
            (C.VLLM_LOG_DRAFT_TOKENS, totals.drafted),
        ):
            target = Family(name)
            target.add((), value)
            yield target


def goodput(snapshot: Snapshot, run: Run) -> Iterator[Family]:
    """Per cell the goodput counters (since the start; analysis/speed/goodput.py), and per slice
    and model its TPOT over the window with its bounds."""
    names = C.GOODPUT_CELL_COUNTERS
    families = [Family(name) for name in names]
    for (model, ctx, task, load), (_, since) in snapshot.goodput_cells.items():
        labels = (model, ctx, task, *run, load)
        values = since.decode_fields()
        for family, value in zip(families, values, strict=True):
            family.add(labels, value)
    yield from families
    tpot = Family(C.TPOT_WINDOW_SECONDS)
    for key, view in snapshot.goodput.items():
        if key[1] != "load" and view.tpot is not None:
            bounds(tpot, (key[0], key[1], key[2], *run), view.tpot)
    yield tpot


def latency_slos(snapshot: Snapshot, run: Run) -> Iterator[Family]:
    """Requests against each latency objective by result, since the start (sorted: a new key
    lands in its place, not at the end)."""
    requests = Family(C.LATENCY_SLO_REQUESTS)
    for (slo, model, variant, result), n in sorted(snapshot.latency.counts.items()):
        requests.add((model, variant, *run, slo, result), n)
    yield requests
    loads = Family(C.LATENCY_SLO_LOAD_REQUESTS)
    for (slo, model, load, result), n in sorted(snapshot.latency.by_load.items()):
        loads.add((model, *run, slo, load, result), n)
    yield loads
    objectives = Family(C.LATENCY_SLO_OBJECTIVE)
    for objective in snapshot.latency.objectives:
        objectives.add((objective.name,), objective.objective)
    yield objectives
