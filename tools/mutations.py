"""Deliberate mutations of the lines that matter: each must make the fast tests fail.

    .venv/bin/python tools/mutations.py [NAME ...]

For each mutation: replace one exact piece of source, run the unit and artifact tests (stop at
the first failure), put the source back, and report whether a test caught it. Exit 1 when one
survived. The list grows with every line a test is meant to guard.

It works on a scratch copy of the checkout (its agent/ first on PYTHONPATH), never on the
checkout itself: a commit made while it ran once swept a mutated line into main.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # under agent/specwatch
    old: str
    new: str
    # the tests that must catch it: the fast ones, unless the line is only reachable over a
    # socket (the proxy's HTTP framing)
    tests: tuple[str, ...] = ("tests/unit", "tests/artifacts")


MUTATIONS = (
    Mutation(
        "readings in steps: a change held during a reading is made out of order",
        "core/turns.py",
        "                for change in held:\n",
        "                for change in reversed(held):\n",
    ),
    Mutation(
        "readings in steps: a request ingested between two steps goes unnoticed",
        "analysis/analyzer.py",
        "        self._changes += 1\n        request_key",
        "        request_key",
    ),
    Mutation(
        "snapshots: a histogram observed again is not copied again",
        "analysis/counting/requests.py",
        "        if histogram not in self._observed:\n",
        "        if histogram not in self._observed and not self._copies[name]:\n",
    ),
    Mutation(
        "byte budget: holds up to its limit, not a byte past it",
        "proxy/budget.py",
        "if self.held + size > self.limit:",
        "if self.held + size >= self.limit:",
    ),
    Mutation(
        "byte budget: a stream's usage event must find room to be read",
        "proxy/exchange.py",
        "if not kept or carried.take(kept):",
        "if True:",
    ),
    Mutation(
        "byte budget: a capture too large to compare lets go of its bytes at once",
        "proxy/exchange.py",
        "                self.capture = None  # too large to compare, or no room: not shadowed\n"
        "                self._held.release()",
        "                self.capture = None  # too large to compare, or no room: not shadowed",
    ),
    Mutation(
        "settings: a byte budget below one response is refused",
        "settings/root.py",
        "if self.limits.max_observed_bytes < self.limits.max_response_bytes:",
        "if False:",
    ),
    Mutation(
        "a zone entered past its evidence bar, not at it",
        "analysis/verdicts/evidence.py",
        "return value if abs(value) >= bar else 0.0",
        "return value if abs(value) > bar else 0.0",
    ),
    Mutation(
        "where windows disagree, the shortest window decides whether or not its data differ",
        "analysis/verdicts/evidence.py",
        "            if window.change_from(chosen.seconds) >= self.change_bar:",
        "            if True:",
    ),
    Mutation(
        "evidence without the widening for a variance known from few requests",
        "analysis/verdicts/evidence.py",
        "        value = (t_quantile(tail_confidence(bar), requests - 1) ** 2) / (2.0 * bar)",
        "        value = 1.0",
    ),
    Mutation(
        "a verdict left at the entry bar, not the exit bar",
        "analysis/verdicts/zones.py",
        'value = evidence.decided(f"{threshold}_exit", cfg.exit_bar(threshold), False, within)',
        'value = evidence.decided(f"{threshold}_exit", cfg.bar(threshold), False, within)',
    ),
    Mutation(
        "red held back by the dwell time",
        "analysis/verdicts/zones.py",
        "    return target if target == Zone.RED and news else zone",
        "    return zone",
    ),
    Mutation(
        "a late record counted in a window that no longer holds its bucket",
        "analysis/verdicts/evidence_windows.py",
        "                if index >= edge:\n                    _add_into(total, values)",
        "                if True:\n                    _add_into(total, values)",
    ),
    Mutation(
        "a sealed bucket counted in a window that no longer holds it",
        "analysis/verdicts/evidence_windows.py",
        "            if index >= edge:\n                _add_into(total, sealed)",
        "            if True:\n                _add_into(total, sealed)",
    ),
    Mutation(
        "evidence windows: a record's drafted tokens joined the open bucket as accepted",
        "analysis/verdicts/evidence_windows.py",
        "    total[6] += c.drafted\n",
        "    total[6] += c.accepted\n",
    ),
    Mutation(
        "the open bucket read into a window that no longer holds it",
        "analysis/verdicts/evidence_windows.py",
        "            if opened is not None and opened[0] >= edge:",
        "            if opened is not None:",
    ),
    Mutation(
        "the open bucket taken out of a total it never joined",
        "analysis/verdicts/evidence_windows.py",
        "                    if not isinstance(values, list):  # the open bucket is in no total",
        "                    if True:",
    ),
    Mutation(
        "an event's one-line shortcut taken across a `\\r` line end",
        "engines/vllm/response.py",
        '        and event.find(b"\\r") < 0\n    ):\n        return event[6:-2]',
        "    ):\n        return event[6:-2]",
    ),
    Mutation(
        "the model rollup's moments split at ctx buckets",
        "analysis/counting/slicing.py",
        "        rollup = Counts.of_request(spec.drafted, spec.accepted, max_position)",
        "        rollup = Counts(max_position)\n"
        "        for counts in parts.values():\n"
        "            rollup.merge(counts)\n"
        "        rollup.requests = 1",
    ),
    Mutation(
        "a modelled gain on the assumed draft cost",
        "analysis/speed/speedup.py",
        "if tau is None or k <= 0 or cost.source == ASSUMED:",
        "if tau is None or k <= 0:",
    ),
    Mutation(
        "a thin A/B window modelled, not insufficient",
        "analysis/speed/speedup.py",
        "            return Gain.insufficient(spans[-1])\n",
        "            pass\n",
    ),
    Mutation(
        "the K table's gap filled from the lowest known bucket, not the nearest below",
        "analysis/speed/load.py",
        "source = below[-1] if below else known[0]",
        "source = below[0] if below else known[0]",
    ),
    Mutation(
        "advise's K table at the default draft cost, not --cost-ratio",
        "commands/shared/ktable.py",
        "k_table = table.k_table(model, cost, settings.zones.confidence, minimum)",
        "default = settings.speedup.default_cost_ratio\n"
        "        k_table = table.k_table(model, default, settings.zones.confidence, minimum)",
    ),
    Mutation(
        "a drift alarm ended at min_delta, not half of it",
        "analysis/drift/detector.py",
        "last_a / last_n >= p0 - cfg.min_delta / 2",
        "last_a / last_n >= p0 - cfg.min_delta",
    ),
    Mutation(
        "the rules' degrees of freedom: requests, not requests - 1",
        "gen/rules.py",
        'Recording(df, f"clamp_min({n} - 1, 1)")',
        'Recording(df, f"clamp_min({n}, 1)")',
    ),
    Mutation(
        "SpecDecodeSliceRed pending 10 minutes, not 5",
        "gen/alert_rules.py",
        '            for_seconds=300,\n            summary="Speculative decoding is in the red',
        '            for_seconds=600,\n            summary="Speculative decoding is in the red',
    ),
    Mutation(
        "SpecDecodeSliceRed without its hysteresis",
        "gen/alert_rules.py",
        "      unless ${on} ${exit} > 0\n",
        "      unless ${on} ${exit} > -1e9\n",
    ),
    Mutation(
        "the rules' bounds from a young series' extrapolated increases",
        "gen/rules.py",
        "(increase(${total}[${span}]) and ${total} offset ${span}) or ${total})",
        "(increase(${total}[${span}])))",
    ),
    Mutation(
        "a comparison's variance token-level, not request-level",
        "analysis/compare/alpha.py",
        "    return max(binomial, robust_variance(*sums))",
        "    return binomial",
    ),
    Mutation(
        "a comparison of many slices without the family-wise guard",
        "analysis/compare/alpha.py",
        "return 1.0 - (1.0 - confidence) / max(1, compared)",
        "return confidence",
    ),
    Mutation(
        "a change's overall part weighed by the mix before, not after",
        "analysis/compare/alpha.py",
        "        rate += w1 * (a1 - a0)",
        "        rate += w0 * (a1 - a0)",
    ),
    Mutation(
        "a config's id blind to vLLM's version",
        "upstream/specconfig.py",
        '{"speculative_config": spec, "vllm_version": vllm_version, **named}',
        '{"speculative_config": spec, **named}',
    ),
    Mutation(
        "the canary family counted per slice, not per model and config",
        "gen/canary.py",
        '    return FAMILY(by=f"{C.Label.MODEL}, {C.Label.CONFIG}", slices=slices, models=models)',
        '    return FAMILY(by=f"{C.Label.MODEL}, {C.Label.CONFIG}, {C.Label.CTX_BUCKET}, '
        '{C.Label.TASK}", slices=slices, models=models)',
    ),
    Mutation(
        "a step's position: the prompt, not prompt + 1",
        "analysis/counting/slicing.py",
        "position = prompt_tokens + 1",
        "position = prompt_tokens",
    ),
    Mutation(
        "PSI always 0 in the analysis",
        "analysis/drift/mix.py",
        "psi_task=psi(_shares_by(b, ctx=False), _shares_by(r, ctx=False)),",
        "psi_task=0.0,",
    ),
    Mutation(
        "/status without the per-slice drift block",
        "export/status.py",
        '"drift": None if view.drift is None else asdict(view.drift),',
        '"drift": None,',
    ),
    Mutation(
        "the shadow check without its temperature-0 gate",
        "proxy/shadow.py",
        'if body.get("temperature") != 0 or body.get("n", 1) != 1:',
        'if body.get("n", 1) != 1:',
    ),
    Mutation(
        "token-level, not request-level, variance",
        "analysis/counting/stats.py",
        "deff = max(1.0, robust_variance(n, x, y, xx, xy, yy) / binomial)",
        "deff = 1.0",
    ),
    Mutation(
        "no small-sample t",
        "analysis/counting/stats.py",
        "lower, upper = wilson_bounds(p, y / deff, t_quantile(confidence, n - 1))",
        "lower, upper = wilson_bounds(p, y / deff, z_for(confidence))",
    ),
    Mutation(
        "a gain below 1 on its estimate, not its whole interval",
        "analysis/speed/speedup.py",
        "return self.upper < 1.0",
        "return self.ratio < 1.0",
    ),
    Mutation(
        "the measured gain unweighted by tokens",
        "analysis/speed/speedup.py",
        "windowed.add(ts, tpot * decode, decode)",
        "windowed.add(ts, tpot, 1)",
    ),
    Mutation(
        "vLLM's engine alpha with every step a rejection",
        "analysis/counting/engine.py",
        "    if k and counts.drafted == k * counts.steps:\n"
        "        counts.trials = counts.accepted + (counts.steps - per_position[k - 1])",
        "    counts.trials = counts.accepted + counts.steps",
    ),
    Mutation(
        "per-position acceptance over every step, not the steps that drafted that far",
        "analysis/counting/stats.py",
        "            tested = c.drafted_by_position\n",
        "            tested = [c.steps] * len(c.by_position)\n",
    ),
    Mutation(
        "drift without the wander model",
        "analysis/drift/baseline.py",
        "    if long_enough and square > 0 and",
        "    if False and square > 0 and",
    ),
    Mutation(
        "drift without the requests' design effect (a constant overdispersion)",
        "analysis/drift/detector.py",
        "baseline.icc * design(steps, squares))",
        "0.0 * design(steps, squares))",
    ),
    Mutation(
        "drift on a bucket's ratio, not its deviation per expected trial of its steps",
        "analysis/drift/detector.py",
        "        deviation = (accepted - p0 * trials) / expected",
        "        deviation = accepted / trials - p0",
    ),
    Mutation(
        "drift without the short baseline's predictive variance",
        "analysis/drift/detector.py",
        "    return (1.0 + 1.0 / buckets) * nu / (nu - 2)",
        "    return 1.0",
    ),
    Mutation(
        "per-position runs labelled past the positions counted (a K past max_position)",
        "export/collector.py",
        "    k = min(total.max_drafted, len(total.by_position))",
        "    k = total.max_drafted",
    ),
    Mutation(
        "a cycle-log timestamp that is not unix seconds, read",
        "store/cyclelog.py",
        "    if not 0 <= ts < MAX_TS:",
        "    if not 0 <= ts:",
    ),
    Mutation(
        "a negative duration in a cycle log, read",
        "store/cyclelog.py",
        "    if value < 0:  # a duration",
        "    if False:  # a duration",
    ),
    Mutation(
        "max_position unbounded",
        "settings/service.py",
        "max_position: int = Field(default=16, ge=1, le=256)",
        "max_position: int = Field(default=16, ge=1)",
    ),
    Mutation(
        "a measured gain from sums that overflowed",
        "analysis/speed/speedup.py",
        "    if spec.requests < 2 or spec.x <= 0 or spec.y <= 0 or not _finite(spec):",
        "    if spec.requests < 2 or spec.x <= 0 or spec.y <= 0:",
    ),
    Mutation(
        "an evaluation in steps judging slices the analysis changed under",
        "analysis/analyzer.py",
        "                yield\n                self._unchanged_since(changes)\n"
        "                pace.restart()\n            cost = costs",
        "                yield\n                pace.restart()\n            cost = costs",
    ),
    Mutation(
        "an evaluation judging windows read while the analysis changed",
        "analysis/analyzer.py",
        "        windows, _ = yield from self._windows_in_turns(now, step)\n"
        "        self._unchanged_since(changes)\n",
        "        windows, _ = yield from self._windows_in_turns(now, step)\n",
    ),
    Mutation(
        "the drift's judging in one step",
        "analysis/drift/detector.py",
        "            if pace.due():\n                yield\n",
        "            if pace.due():\n                pass\n",
    ),
    Mutation(
        "a terminator cut between two pieces of an SSE event, missed",
        "proxy/sse.py",
        "max(0, seen - 3)",
        "seen",
    ),
    Mutation(
        "a partial SSE event charged to the budget again at every piece",
        "proxy/sse.py",
        "self._room.take(len(pending) - charged)",
        "self._room.take(len(pending))",
    ),
    Mutation(
        "a stream's event past the budget, not counted",
        "proxy/stream.py",
        "            self.parse_failure = ParseReason.MEMORY_BUDGET\n",
        "            pass\n",
    ),
    Mutation(
        "a dropped stream still charging the budget",
        "proxy/sse.py",
        "        self.flush()\n        self._room = None\n",
        "        self.flush()\n",
    ),
    Mutation(
        "stream: the usage event is the one with no choices, not any event with usage",
        "engines/vllm/response.py",
        """        event.find(b'"choices":[]') >= 0 or _EMPTY_CHOICES.search(event) is not None""",
        "        True",
    ),
    Mutation(
        "SSE: a blank line of bare carriage returns ends an event",
        "proxy/sse.py",
        '_SEPARATORS = (b"\\n\\n", b"\\r\\n\\r\\n", b"\\r\\r")',
        '_SEPARATORS = (b"\\n\\n", b"\\r\\n\\r\\n")',
    ),
    Mutation(
        "spec block: num_spec_steps may leave out the steps that drafted nothing",
        "engines/vllm/response.py",
        "    if _count(steps) != drafting:\n",
        "    if True:\n",
    ),
    Mutation(
        "context positions: a step's position leaves out the token it emits",
        "analysis/causes/positions.py",
        "            position += accepted[i] + 1\n",
        "            position += accepted[i]\n",
    ),
    Mutation(
        "counts: a step that accepted all K counted with a rejection's trial",
        "analysis/counting/counts.py",
        "    return n, total_a, total_a + n - by_count[k], reached",
        "    return n, total_a, total_a + n, reached",
    ),
    Mutation(
        "counts: positions past a request's one drafted length counted as drafted",
        "analysis/counting/counts.py",
        "                return [steps] * length + [0] * (cap - length)",
        "                return [steps] * cap",
    ),
    Mutation(
        "spec block: a step that accepted more than it drafted let through",
        "engines/vllm/response.py",
        "        if accepted[i] > d:\n",
        "        if accepted[i] > d + 1:\n",
    ),
    Mutation(
        "spec block: a step that drafted more than K let through",
        "engines/vllm/response.py",
        "    if most > k:\n",
        "    if most > k + 1:\n",
    ),
    Mutation(
        "spec block: num_accepted_draft_tokens checked against the drafted tokens",
        "engines/vllm/response.py",
        '    _check_total("num_accepted_draft_tokens", accepted_tokens, total_a)',
        '    _check_total("num_accepted_draft_tokens", accepted_tokens, total_d)',
    ),
    Mutation(
        "histograms: a value on a bound filed above it (le is inclusive)",
        "core/histogram.py",
        "            if value <= bounds[i]:\n",
        "            if value < bounds[i]:\n",
    ),
    Mutation(
        "context positions: the last bin's steps of a request never added",
        "analysis/causes/positions.py",
        "        drafted_in[current] += bin_drafted\n        accepted_in[current] += bin_accepted\n"
        "        self.reach",
        "        self.reach",
    ),
    Mutation(
        "chunked framing: a size past the looked-up lines read from the table",
        "proxy/wire.py",
        "_SIZE_LINES[n] if n < _LOOKED_UP else",
        "_SIZE_LINES[min(n, _LOOKED_UP - 1)] if n <= _LOOKED_UP else",
    ),
    Mutation(
        "usage event: the typed read takes an event whose one choice carries its own block",
        "engines/vllm/usage.py",
        "    return None if event.choices else _parsed(event)",
        "    return _parsed(event)",
    ),
    Mutation(
        "stream: the fingerprint given back under another name",
        "engines/vllm/usage.py",
        """b',"system_fingerprint":' + fingerprint""",
        """b',"fingerprint":' + fingerprint""",
    ),
    Mutation(
        "draft cost: a sandwich moment summed with the wrong power of s",
        "analysis/speed/draft_cost.py",
        "        self.q13 += t3 * s\n",
        "        self.q13 += t3 * s2\n",
    ),
    Mutation(
        "stream options: a client's continuous_usage_stats is not switched on by injection",
        "proxy/proxy.py",
        "    kept = {name: value for name, value in kept.items() if name != "
        '"continuous_usage_stats"}',
        "",
    ),
    Mutation(
        "stream: usage vLLM forces on everyone is not taken out",
        "proxy/stream.py",
        "                    self._forced = self._forced or carries_usage(event)",
        "                    pass",
    ),
    Mutation(
        "HTTP/1.0: no chunked framing to a 1.0 client",
        "proxy/server.py",
        "        self._chunked = unframed and not self._http10",
        "        self._chunked = unframed",
        ("tests/integration/test_proxy.py",),
    ),
    Mutation(
        "coverage: the proxy's count is taken at each scrape",
        "analysis/analyzer.py",
        "            sample, self._drafted_seen.get(model, 0), self._steps_seen.get(model, 0)\n",
        "            sample\n",
    ),
    Mutation(
        "coverage: between the same scrapes, not up to now",
        "analysis/counting/engine.py",
        "        between.drafted, between.steps = seen - before, seen_steps - before_steps",
        "        between.drafted, between.steps = seen, seen_steps",
    ),
    Mutation(
        "causes: the draft's cliff is where acceptance falls, not anywhere it is low after",
        "analysis/causes/positions.py",
        "                and after_a <= CLIFF_AFTER_MAX * after_d\n",
        "                and after_a <= 0.5 * after_d\n",
        ("tests/integration/test_causes.py",),
    ),
    Mutation(
        "causes: repetition is named only where the lift changes the verdict",
        "analysis/causes/rules.py",
        "        if not any(without < threshold <= alpha for threshold in self._thresholds):\n",
        "        if False:\n",
        ("tests/unit/analysis/test_causes.py",),
    ),
    Mutation(
        "causes: a synthetic verifier's slices get no zone",
        "analysis/analyzer.py",
        "                zones.not_judged(state, now)\n                continue\n",
        "                zones.not_judged(state, now)\n",
        ("tests/integration/test_causes.py",),
    ),
    Mutation(
        "causes: vLLM's tau is compared with the arrays' within rounding only",
        "analysis/causes/rules.py",
        "TAU_TOLERANCE = 0.01\n",
        "TAU_TOLERANCE = 1.0\n",
        ("tests/integration/test_causes.py",),
    ),
    Mutation(
        "causes: a schedule's compliance counts steps drafting more than planned",
        "analysis/causes/rules.py",
        "        tally.schedule_over += sum(1 for d in spec.drafted if d > planned)\n",
        "        tally.schedule_over += sum(1 for d in spec.drafted if d > planned + 4)\n",
        ("tests/integration/test_causes.py",),
    ),
    Mutation(
        "cycle log: no text unless capture_text is on",
        "sidecar/intake.py",
        "            if cycle_log.capture_text and self._cycle_log is not None\n",
        "            if self._cycle_log is not None\n",
        ("tests/integration/test_causes.py",),
    ),
    Mutation(
        "fleet analysis: a step's position one token late (its ctx bucket off at a bound)",
        "fleet/sql.py",
        'step_bucket = buckets.of("p + j + coalesce(list_sum(a[1:j - 1]), 0)")',
        'step_bucket = buckets.of("p + j + 1 + coalesce(list_sum(a[1:j - 1]), 0)")',
        tests=("tests/integration/test_analyze.py",),
    ),
    Mutation(
        "fleet analysis: a request's trials counted as if no step accepted all K",
        "fleet/sql.py",
        'ELSE accepted_total + n - {_slot("d_min")} END AS row_trials,',
        "ELSE accepted_total + n END AS row_trials,",
        tests=("tests/integration/test_analyze.py",),
    ),
    Mutation(
        "fleet analysis: a request drafting K = 9 packed into the slots of 0..7",
        "fleet/sql.py",
        "AND d_min < {SLOTS}",
        "AND d_min < {SLOTS} + 2",
        tests=("tests/integration/test_analyze.py",),
    ),
    Mutation(
        "fleet analysis: steps that accepted all K get a trial too",
        "analysis/counting/counts.py",
        "            out.trials += n * (a + 1 if a < d else a)",
        "            out.trials += n * (a + 1)",
        tests=("tests/integration/test_analyze.py",),
    ),
    Mutation(
        "after a change on news, a window that mixes in the time before decides",
        "analysis/verdicts/evidence.py",
        "and (horizon is None or window.seconds <= horizon)",
        "and (horizon is None or True)",
    ),
    Mutation(
        "a red within the dwell on older evidence than what decided the last change",
        "analysis/verdicts/zones.py",
        "    return state.decided_by is None or window.seconds <= state.decided_by",
        "    return True",
    ),
    Mutation(
        "a red within the dwell whatever the margin below red",
        "analysis/verdicts/zones.py",
        '    floor, bar = cfg.red - cfg.collapse_margin, cfg.bar("red")',
        '    floor, bar = cfg.red, cfg.bar("red")',
    ),
    Mutation(
        "a change between windows judged without the older rest's variance",
        "analysis/verdicts/evidence.py",
        "    variance += _design_effect(older) * _widening(older.requests, bar) * spread",
        "    variance += 0.0 * spread",
    ),
    Mutation(
        "the change ratio against the whole longer window, not its older rest",
        "analysis/verdicts/evidence.py",
        "self.sums, self._effect(basis), rest(other, self.sums), basis.bars[2]",
        "self.sums, self._effect(basis), other, basis.bars[2]",
    ),
    Mutation(
        "the rules' deciding window: a shorter window's change taken where it is not",
        "gen/zone_rules.py",
        "            expr += f\"\\n   unless {on} {condition.format(cb=f'{change_bar:g}')}\"",
        "            expr += f\"\\n   and {on} {condition.format(cb=f'{change_bar:g}')}\"",
    ),
    Mutation(
        "red's evidence at green's bar",
        "analysis/verdicts/evidence.py",
        "scale = self._scale(basis, basis.bars[index % 2])",
        "scale = self._scale(basis, basis.bars[0])",
    ),
    Mutation(
        "compare: a model's rollup outside its slices' family",
        "analysis/compare/alpha.py",
        "    chosen |= _compared(rollup_rows, min_trials, min_requests)\n    families",
        "    families",
    ),
    Mutation(
        "compare: one family over every model compared",
        "analysis/compare/alpha.py",
        "        each = family_confidence(confidence, families[key[0]])",
        "        each = family_confidence(confidence, sum(families.values()))",
    ),
    Mutation(
        "the canary's family without the model's own comparison",
        "gen/canary.py",
        "    (count by (${by}) (${slices})\n    + on(${by}) count by (${by}) (${models}))\n"
        "    or count by (${by}) (${slices})\n",
        "    count by (${by}) (${slices})\n",
    ),
    Mutation(
        "replay folds models past the live cap into other",
        "analysis/replay.py",
        '    settings = settings.model_copy(update={"limits": limits})\n',
        "",
    ),
    Mutation(
        "position_cliff: a cliff where the position before does not hold either",
        "analysis/causes/positions.py",
        "            and accepted_before >= HOLD_MIN * tried_before\n",
        "",
    ),
    Mutation(
        "position_cliff: low acceptance taken for none",
        "analysis/causes/positions.py",
        "            and accepted <= CLIFF_MAX * tried\n",
        "            and accepted <= 0.5 * tried\n",
    ),
    Mutation(
        "first_position_deficit: a small gap named",
        "analysis/causes/positions.py",
        "        if first <= DEFICIT_RATIO * later and later - first >= DEFICIT_GAP:",
        "        if first <= later:",
    ),
    Mutation(
        "not_drafting: a drafter that drafts a little named idle",
        "analysis/causes/drafting.py",
        "            and self.drafted <= IDLE_MAX_SHARE * self.output_tokens\n",
        "            and self.drafted <= 0.5 * self.output_tokens\n",
    ),
    Mutation(
        "collapse_after_pause: any drop after a pause named",
        "analysis/causes/drafting.py",
        "        if after <= PAUSE_RATIO * before and before - after >= PAUSE_GAP:",
        "        if after < before:",
    ),
    # the seven of issue 46: each a behaviour a user would see, none guarded before
    Mutation(
        "the rollouts analysis fails on one minute's dip, not on a held drop",
        "gen/rollout.py",
        '    worse = HELD(\n        over_time="max_over_time",',
        '    worse = HELD(\n        over_time="min_over_time",',
    ),
    Mutation(
        "goodput: the rollout fails on one minute past the line, not on a held slowdown",
        "gen/rollout.py",
        '    slower = HELD(\n        over_time="min_over_time",',
        '    slower = HELD(\n        over_time="max_over_time",',
    ),
    Mutation(
        "goodput: SpecDecodeCanarySlower on any sure slowdown, not past the margin",
        "gen/goodput_alert.py",
        "    above = 1.0 + cfg.tpot_margin\n",
        "    above = 1.0\n",
    ),
    Mutation(
        "goodput: CanaryWorse pages where the configs speculate differently",
        "gen/canary.py",
        "    unless on(${baseline_config}, ${speculation}) ${stable}\n",
        "    and on(${baseline_config}, ${speculation}) ${stable}\n",
    ),
    Mutation(
        "goodput: load buckets weighed alike, not at the after side's mix",
        "analysis/compare/goodput.py",
        "        w = pair.weight / total\n",
        "        w = 1.0 / len(rows)\n",
    ),
    Mutation(
        "goodput: slower on the estimate, not on the whole interval",
        "analysis/compare/goodput.py",
        "    if ratio.lower > 1.0:\n",
        "    if ratio.estimate > 1.0:\n",
    ),
    Mutation(
        "goodput: TPOT's interval on requests, not requests - 1, degrees of freedom",
        "analysis/speed/goodput.py",
        "t_quantile(confidence, sums.requests - 1)",
        "t_quantile(confidence, sums.requests)",
    ),
    Mutation(
        "goodput: a request in its prompt's ctx bucket, not its first step's",
        "analysis/speed/goodput.py",
        "self._buckets.label(prompt + 1)",
        "self._buckets.label(prompt)",
    ),
    Mutation(
        "compare: only the after side must pass the gates",
        "analysis/compare/alpha.py",
        "if passes(before, min_trials, min_requests) and passes(",
        "if passes(",
    ),
    Mutation(
        "causes: a context limit on a bucket's bound tags the bucket below it",
        "analysis/counting/slicing.py",
        "        return index >= len(self.bounds) or self.bounds[index] > position",
        "        return index >= len(self.bounds) or self.bounds[index] >= position",
    ),
    Mutation(
        "causes: exactly three loops are not named",
        "analysis/causes/rules.py",
        "        if n < REPETITION_MIN_REQUESTS or rest <= 0:",
        "        if n <= REPETITION_MIN_REQUESTS or rest <= 0:",
    ),
    Mutation(
        "causes: a schedule row's upper bound is outside the row",
        "analysis/causes/rules.py",
        "if lo <= in_flight <= hi), None)",
        "if lo <= in_flight < hi), None)",
    ),
    Mutation(
        "specconfig: `serve` followed by a flag takes the flag for the model",
        "upstream/specconfig.py",
        '        if arg == "serve" and not argv[i + 1].startswith("-"):',
        '        if arg == "serve":',
    ),
    Mutation(
        "specconfig: a longer flag read as the flag (`--model-impl=x` as `--model=`)",
        "upstream/specconfig.py",
        '            elif arg.startswith(flag + "="):',
        "            elif arg.startswith(flag):",
    ),
    Mutation(
        "a stream read to its [DONE] and closed first is counted client_aborted",
        "proxy/exchange.py",
        "        if rewriter is not None and rewriter.done:",
        "        if False:",
        ("tests/integration/test_replay_equals_live.py",),
    ),
    Mutation(
        "the cycle log drops the steps of a client gone after vLLM's final metrics",
        "store/writer.py",
        "        if record.outcome != Outcome.OBSERVED and (\n            baseline or",
        "        if record.outcome != Outcome.OBSERVED or (\n            baseline or",
        ("tests/integration/test_replay_equals_live.py",),
    ),
    Mutation(
        "a verdict left at its threshold, not past the exit margin",
        "analysis/verdicts/evidence.py",
        "                cfg.green - cfg.exit_margin,\n",
        "                cfg.green,\n",
    ),
    Mutation(
        "SGLang: an empty sglext left in an answer that never had one",
        "engines/sglang.py",
        "    if len(inner) == 1:",
        "    if False:",
    ),
    Mutation(
        "SGLang: the client asked for its details and loses them all the same",
        "proxy/proxy.py",
        "and self.engine == SGLANG and not sglang.wants(body):",
        "and self.engine == SGLANG:",
        ("tests/integration/test_engines.py",),
    ),
    Mutation(
        "red left at its threshold, not past the exit margin",
        "analysis/verdicts/evidence.py",
        "                cfg.red + cfg.exit_margin,\n",
        "                cfg.red,\n",
    ),
    Mutation(
        "compiled analysis: a count's sums typed as floats (mypyc writes 70.0 for 70)",
        "analysis/counting/sums.py",
        "Number = int | float\n",
        "Number = float\n",
        (
            "tests/e2e/test_wheel.py::test_the_compiled_analysis_replays_to_the_bytes_the_source_gives",
        ),
    ),
    Mutation(
        "compiled analysis: load bounds typed as floats (mypyc labels `2-4.0`)",
        "analysis/counting/slicing.py",
        "        highs: tuple[int | None, ...] = (*self.bounds, None)\n",
        "        highs: tuple[float | None, ...] = (*self.bounds, None)\n",
        ("tests/e2e/test_wheel.py::test_every_unit_suite_passes_against_the_compiled_build",),
    ),
    Mutation(
        "the analysis queue read whole in one turn: the loop held while it is read",
        "sidecar/intake.py",
        "                    await asyncio.sleep(0)  # relaying goes on between batches\n",
        "                    pass\n",
        ("tests/integration/test_intake.py",),
    ),
    Mutation(
        "the analysis queue read as observations come, no batch gathered",
        "sidecar/intake.py",
        "            await self._gather()\n",
        "            pass\n",
        ("tests/integration/test_intake.py",),
    ),
    Mutation(
        "a verdict passed over while its dwell runs: the change it holds back never comes",
        "analysis/verdicts/zones.py",
        "    if not _dwelt(state, now, cfg):\n        return False\n",
        "",
        ("tests/unit/analysis/test_zones.py",),
    ),
    Mutation(
        "a verdict passed over while its horizon keeps a longer window out",
        "analysis/verdicts/zones.py",
        "    return reach is None or reach >= longest\n",
        "    return True\n",
        ("tests/unit/analysis/test_zones.py",),
    ),
    Mutation(
        "an insufficient slice passed over while a measured slower gain is timed",
        "analysis/verdicts/zones.py",
        "        return state.slower_since is None or not _measured(gain)\n",
        "        return True\n",
        ("tests/unit/analysis/test_zones.py",),
    ),
    Mutation(
        "same load: the load's slope from the sides' difference, not within each cell",
        "analysis/compare/same_load.py",
        "            got[0] += (s.xb - t * s.yb) / t\n",
        "            got[0] += s.xb / t\n",
        ("tests/unit/analysis/test_goodput_factors.py", "tests/unit/analysis/test_goodput.py"),
    ),
    Mutation(
        "same load: each cell's log-ratio left at its own loads",
        "analysis/compare/goodput.py",
        "        shift = 0.0 if slope is None else slope.slope * pair.shift\n",
        "        shift = 0.0\n",
        ("tests/unit/analysis/test_goodput_factors.py", "tests/unit/analysis/test_goodput.py"),
    ),
    Mutation(
        "same load: the slope's variance left out of the interval",
        "analysis/compare/goodput.py",
        "        variance += part\n",
        "        variance += 0.0 * part\n",
        ("tests/artifacts/test_rules.py",),
    ),
    Mutation(
        "same load: each side's pooled spread halved",
        "analysis/compare/same_load.py",
        "            got[0] += _deviation(s)\n",
        "            got[0] += 0.5 * _deviation(s)\n",
        ("tests/artifacts/test_rules.py",),
    ),
    Mutation(
        "same load: sides whose loads differ paired without a slope to bring them together",
        "analysis/compare/goodput.py",
        "    if shift != 0.0 and bucket not in slopes:\n",
        "    if False:\n",
        ("tests/unit/analysis/test_goodput_factors.py", "tests/unit/analysis/test_goodput.py"),
    ),
    Mutation(
        "factors: a factor named on its estimate, not on its whole interval",
        "analysis/compare/factors.py",
        "        STEP_TIME: (step.lower > 1.0, step.upper < 1.0),  # (slower, faster)\n",
        "        STEP_TIME: (step.estimate > 1.0, step.estimate < 1.0),  # (slower, faster)\n",
        ("tests/unit/analysis/test_goodput_factors.py", "tests/unit/analysis/test_goodput.py"),
    ),
    Mutation(
        "factors: the load's adjustment on the tokens per step too",
        "analysis/compare/factors.py",
        "b.tokens_per_step(), a.tokens_per_step(), pair.bucket, 0.0,",
        "b.tokens_per_step(), a.tokens_per_step(), pair.bucket, pair.shift,",
        ("tests/artifacts/test_rules.py",),
    ),
    Mutation(
        "factors (PromQL): the step's time not moved to the canary's load",
        "gen/goodput_factors.py",
        '        if factor == C.FACTOR_STEP_TIME\n        else ""\n',
        '        if False\n        else ""\n',
        ("tests/artifacts/test_rules.py",),
    ),
    Mutation(
        "same load (PromQL): the slope's part of a cell's log-ratio added, not taken out",
        "gen/goodput_cells.py",
        "\\n- {moved}\\nand on({cell}) {paired}",
        "\\n+ {moved}\\nand on({cell}) {paired}",
        ("tests/artifacts/test_rules.py",),
    ),
    Mutation(
        "stream: SGLang's null usage taken for vLLM's usage chunk (the C test's reference)",
        "proxy/stream.py",
        """    if chunk.find(b'"usage"') >= 0 and chunk.find(b'"usage":null') < 0:""",
        """    if chunk.find(b'"usage"') >= 0:""",
        ("tests/integration/test_engines.py",),
    ),
    Mutation(
        "stream: SGLang's null usage taken for usage in the general path",
        "engines/vllm/response.py",
        """    return event.find(b'"usage"') >= 0 and event.find(b'"usage":null') < 0""",
        """    return event.find(b'"usage"') >= 0""",
        ("tests/integration/test_engines.py",),
    ),
    Mutation(
        "compare: --split track reads the canary as A",
        "commands/compare.py",
        "        return (TRACK_STABLE, TRACK_CANARY)\n",
        "        return (TRACK_CANARY, TRACK_STABLE)\n",
        ("tests/integration/test_compare_loads.py",),
    ),
    Mutation(
        "SGLang: several prompts read as the first one's details",
        "proxy/observation.py",
        "    if obs.features.prompts > 1:\n",
        "    if obs.features.prompts > 2:\n",
        ("tests/unit/engines/test_sglang_answers.py",),
    ),
    Mutation(
        "SGLang: prompts given as token lists counted as one",
        "proxy/tasks.py",
        "isinstance(prompt[0], (str, list))",
        "isinstance(prompt[0], str)",
        ("tests/unit/engines/test_sglang_answers.py",),
    ),
    Mutation(
        "SGLang: a one-token answer with no details read as data missing",
        "proxy/observation.py",
        "        and parsed.completion_tokens <= 1\n",
        "        and parsed.completion_tokens < 1\n",
        ("tests/unit/engines/test_sglang_answers.py",),
    ),
    Mutation(
        "SGLang: tree drafts read as lines of positions",
        "proxy/observation.py",
        "    if tree and parsed.spec is not None:\n",
        "    if False:\n",
        ("tests/unit/engines/test_sglang_answers.py",),
    ),
    Mutation(
        "serve: a module after a launcher not read as its engine",
        "engines/detect.py",
        "    if token in _MODULES:\n",
        "    if False:\n",
        ("tests/unit/engines/test_detect.py",),
    ),
    Mutation(
        "TensorRT-LLM: its JSON /metrics scraped instead of its Prometheus page",
        "upstream/scraper.py",
        'path = C.TRTLLM_METRICS_PATH if trtllm else "/metrics"',
        'path = "/metrics"',
        ("tests/integration/test_engine_pages.py",),
    ),
    Mutation(
        "TensorRT-LLM: the steps read off the second position, not the first",
        "upstream/scraper.py",
        "drafts=drafted.get(0, 0.0),",
        "drafts=drafted.get(1, 0.0),",
        ("tests/integration/test_engine_pages.py",),
    ),
    Mutation(
        "engine counters made at the first count taken as the baseline",
        "upstream/scraper.py",
        "            if not first and sample.model not in self._counted:\n",
        "            if False:\n",
        ("tests/integration/test_engine_pages.py",),
    ),
    Mutation(
        "SGLang: coverage on draft tokens it never counts",
        "analysis/counting/engine.py",
        "at = STEPS if not since_start.drafted and since_start.steps > 0 else DRAFTED",
        "at = DRAFTED",
        ("tests/integration/test_engines.py",),
    ),
    # #61: causes, third set
    Mutation(
        "not_drafting: most requests by the share itself, not its lower bound",
        "analysis/causes/drafting.py",
        "            and wilson(self.idle, self.measured, IDLE_SHARE_CONFIDENCE)[0] >= "
        "IDLE_MIN_REQUEST_SHARE\n",
        "            and self.idle / self.measured >= IDLE_MIN_REQUEST_SHARE\n",
        ("tests/unit/analysis/test_causes.py",),
    ),
    Mutation(
        "not_drafting: a model that never drafts has no rollup to carry it",
        "analysis/analyzer.py",
        "                self._window.add(SliceKey(model, C.ALL, C.ALL), record.ts, "
        "self._nothing)\n",
        "                pass\n",
        ("tests/unit/analysis/test_causes.py",),
    ),
    Mutation(
        "position_cliff from a context: the position before the cliff not held to account",
        "analysis/causes/positions.py",
        "                and before_a >= HOLD_MIN * before_t\n",
        "",
        ("tests/unit/analysis/test_causes.py",),
    ),
    Mutation(
        "position_cliff from a context: the fall not required past the cut",
        "analysis/causes/positions.py",
        "                and after_a <= CLIFF_MAX * after_t\n",
        "",
        ("tests/unit/analysis/test_causes.py",),
    ),
    Mutation(
        "position_cliff from a context: not carried to the slices that straddle it",
        "analysis/causes/positions.py",
        "            return detail if rollup or self._buckets.reaches(bucket, context) else None\n",
        "            return detail if rollup else None\n",
        ("tests/integration/test_cliff_context.py",),
    ),
    # #60: latency SLOs
    Mutation(
        "latency SLO: a TTFT at its threshold counted as missed",
        "analysis/counting/objectives.py",
        "    late = ttft > ttft_seconds\n",
        "    late = ttft >= ttft_seconds\n",
        ("tests/unit/analysis/test_objectives.py",),
    ),
    Mutation(
        "latency SLO: an upstream error counted as no event, not as a bad one",
        "analysis/counting/objectives.py",
        "        return None if _clients_fault(record.status) else SloResult.ERROR\n",
        "        return None\n",
        ("tests/unit/analysis/test_objectives.py",),
    ),
    Mutation(
        "latency SLO: one token's request held to a TPOT it has not",
        "analysis/counting/objectives.py",
        "record.completion_tokens is None or record.completion_tokens > 1",
        "True",
        ("tests/unit/analysis/test_objectives.py",),
    ),
    Mutation(
        "latency SLO attainment: each request its own cluster, not each minute",
        "analysis/counting/objectives.py",
        "        if minute != self.minute and self.events > 0:\n",
        "        if self.events > 0:\n",
        ("tests/unit/analysis/test_attainment_coverage.py",),
    ),
    Mutation(
        "canary latency burn: compared across loads, not in the same bucket",
        "gen/latency_slo.py",
        "SAME_LOAD = Q.by((C.Label.MODEL, C.Label.SLO, C.Label.LOAD))",
        "SAME_LOAD = Q.by((C.Label.MODEL, C.Label.SLO))",
        ("tests/artifacts/test_generate.py",),
    ),
    Mutation(
        "canary latency burn: stable's side not held to the minimum requests",
        "gen/latency_slo.py",
        '    and on(${same}) min by (${same}) (${requests}{track="stable"}) >= ${min}\n',
        "",
        ("tests/artifacts/test_generate.py",),
    ),
    Mutation(
        "canary latency burn: the canary's side not held to the minimum requests",
        "gen/latency_slo.py",
        '      and on(${by}) ${requests}{track="canary"} >= ${min}\n',
        "",
        ("tests/artifacts/test_generate.py",),
    ),
    Mutation(
        "latency SLO rules: a config that missed nothing has no error ratio (absent, not 0)",
        "gen/latency_slo.py",
        '      or sum by (${by}) (${increase}(${requests}{result!="unmeasured"}[${span}])) * 0\n',
        "",
        ("tests/artifacts/test_generate.py",),
    ),
    Mutation(
        "latency SLO: a 4xx the request earned counted as a bad request",
        "analysis/counting/objectives.py",
        "        return None if _clients_fault(record.status) else SloResult.ERROR\n",
        "        return SloResult.ERROR\n",
        ("tests/unit/analysis/test_objectives.py",),
    ),
    Mutation(
        "latency SLO rules: unmeasured requests counted as bad",
        "gen/latency_slo.py",
        '{result!~"good|unmeasured"}',
        '{result!="good"}',
        ("tests/artifacts/test_generate.py",),
    ),
    Mutation(
        "latency SLO alerts: each burn factor a tenth higher",
        "gen/latency_slo.py",
        'factor=f"{factor:g}"',
        'factor=f"{factor * 1.1:g}"',
        ("tests/artifacts/test_generate.py",),
    ),
    Mutation(
        "latency SLO rules: no 1h error ratio (the page's long window)",
        "gen/latency_slo.py",
        'WINDOWS = ("5m", "30m", "1h", "2h",',
        'WINDOWS = ("5m", "30m", "2h",',
        ("tests/artifacts/test_generate.py",),
    ),
    # #61: the third set of causes, and sampling
    Mutation(
        "later_positions_collapse: far below position 1 without the absolute gap",
        "analysis/causes/positions.py",
        "        if rate > COLLAPSE_RATIO * first or first - rate < COLLAPSE_GAP:\n",
        "        if rate > COLLAPSE_RATIO * first:\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "later_positions_collapse: exactly half of position 1 is not far below",
        "analysis/causes/positions.py",
        "        if rate > COLLAPSE_RATIO * first or first - rate < COLLAPSE_GAP:\n",
        "        if rate >= COLLAPSE_RATIO * first or first - rate < COLLAPSE_GAP:\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "later_positions_collapse: a cliff (nothing from a position on) named a collapse too",
        "analysis/causes/positions.py",
        "    if position_cliff(counts) is not None:\n        return None\n    tried_later",
        "    tried_later",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "later_positions_collapse: steps that drafted less counted as trying the next position",
        "analysis/causes/positions.py",
        "        full = min(steps_at[j], accepted_at[j] // j) if j < len(steps_at) else 0\n",
        "        full = 0\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "speculation_switched_off: a run shorter than a window is enough",
        "analysis/causes/lifetime.py",
        "            or m.run_last - m.run_start < self._window\n",
        "",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "speculation_switched_off: exactly half drafting before is not enough",
        "analysis/causes/lifetime.py",
        "            or m.before_drafting < SWITCH_BEFORE_SHARE * m.before\n",
        "            or m.before_drafting <= SWITCH_BEFORE_SHARE * m.before\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "speculation_switched_off: a request that drafts does not end the run",
        "analysis/causes/lifetime.py",
        "        m.before_drafting += 1\n        m.run = 0\n",
        "        m.before_drafting += 1\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "draft_mismatch: a draft that accepts now is still a mismatch",
        "analysis/causes/lifetime.py",
        "            or total[1] > MISMATCH_MAX * total[2]\n",
        "",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "draft_mismatch: the bar itself is above it",
        "analysis/causes/lifetime.py",
        "            or first[1] > MISMATCH_MAX * first[2]\n",
        "            or first[1] >= MISMATCH_MAX * first[2]\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "decay_over_uptime: a traffic mix moving to a harder slice read as decay",
        "analysis/causes/lifetime.py",
        "p = accepted / trials  # the slice's own alpha-hat",
        "p = 0.5  # the slice's own alpha-hat",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "decay_over_uptime: a blip in the middle is a slide",
        "analysis/causes/lifetime.py",
        "        if ratio > DECAY_RATIO or z < DECAY_Z or not r_late <= r_middle <= r_early:\n",
        "        if ratio > DECAY_RATIO or z < DECAY_Z:\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "decay_over_uptime: merged bins keep only the first of each pair",
        "analysis/causes/lifetime.py",
        "                moments[to + i] = moments[lo + i] + moments[hi + i]\n",
        "                moments[to + i] = moments[lo + i]\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "k0_still_costs: any K = 0 cost above a plain step is named",
        "analysis/speed/k0_cost.py",
        "            g = d - b * k / 2.0\n",
        "            g = d\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "k0_still_costs: a drafter that costs nothing named too",
        "analysis/speed/k0_cost.py",
        "        if g - z_for(2.0 * K0_CONFIDENCE - 1.0) * se <= 0 or not material:\n",
        "        if g - z_for(2.0 * K0_CONFIDENCE - 1.0) * se <= 0:\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "k0_still_costs: one side of the bucket enough",
        "analysis/speed/k0_cost.py",
        "    if with_zero < K0_MIN_REQUESTS or len(rows) - with_zero < K0_MIN_REQUESTS:\n",
        "    if len(rows) - with_zero < K0_MIN_REQUESTS:\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "not_drafting: named beside speculation_switched_off",
        "analysis/causes/rules.py",
        "        idle = None if switched is not None else self._drafting.not_drafting(model)\n",
        "        idle = self._drafting.not_drafting(model)\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "sampling: top_k 1 at a temperature above 0 read as sampled",
        "proxy/tasks.py",
        "    if temperature == 0 or top_k == 1:\n",
        "    if temperature == 0:\n",
        ("tests/unit/proxy/test_tasks.py",),
    ),
    # #63: survivors of the outside sample, each with a case beside its rule
    Mutation(
        "llama.cpp: timings with one draft field read as nothing drafted",
        "engines/llamacpp.py",
        '    if "draft_n" not in timings and "draft_n_accepted" not in timings:\n',
        '    if "draft_n" not in timings or "draft_n_accepted" not in timings:\n',
        ("tests/unit/engines/test_llamacpp.py",),
    ),
    Mutation(
        "engine fields: histogram keys of two digits refused (K >= 10)",
        "engines/fields.py",
        "value.isdigit() and len(value) <= 6:",
        "value.isdigit() and len(value) <= 1:",
        ("tests/unit/engines/test_shapes.py",),
    ),
    Mutation(
        "position_cliff: a cliff at draft position 2 never named",
        "analysis/causes/positions.py",
        "    positions = _tried_and_accepted(counts)\n    for j in range(1, len(positions)):\n",
        "    positions = _tried_and_accepted(counts)\n    for j in range(2, len(positions)):\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "first_position_deficit: the absolute bar dropped",
        "analysis/causes/positions.py",
        "        if first <= DEFICIT_RATIO * later and later - first >= DEFICIT_GAP:\n",
        "        if first <= DEFICIT_RATIO * later:\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    Mutation(
        "collapse_after_pause: the absolute bar dropped",
        "analysis/causes/drafting.py",
        "        if after <= PAUSE_RATIO * before and before - after >= PAUSE_GAP:\n",
        "        if after <= PAUSE_RATIO * before:\n",
        ("tests/unit/analysis/test_causes_third.py",),
    ),
    # #64: what the sidecar adds, said by the sidecar
    Mutation(
        "added latency: the upstream's span not taken out",
        "proxy/proxy.py",
        "                added = exchange.ended - started - (exchange.done - exchange.sent)\n",
        "                added = exchange.ended - started\n",
        ("tests/integration/test_added_latency.py",),
    ),
    Mutation(
        "sampling: the mode not kept in the cycle log",
        "store/cyclelog.py",
        '        extra["sampling"] = record.sampling\n',
        "        pass\n",
        ("tests/integration/test_lifetime_causes.py",),
    ),
    # #63: the survivors of the last round's sample, each caught beside its rule
    Mutation(
        "judging: evidence kept for entering a verdict reused to keep one",
        "analysis/verdicts/judging.py",
        "(self._window.version(key), self.windows.version(key, now), entry) if proxy else None",
        "(self._window.version(key), self.windows.version(key, now), True) if proxy else None",
        ("tests/unit/analysis/test_judging.py",),
    ),
    Mutation(
        "judging: the rate judged for any proxy window without trials, drafted or not",
        "analysis/verdicts/judging.py",
        "if source == C.SliceSource.PROXY and counts.drafted and not counts.trials:",
        "if source == C.SliceSource.PROXY and not counts.trials:",
        ("tests/unit/analysis/test_judging.py",),
    ),
    Mutation(
        "evidence: the deciding window tried shortest first",
        "analysis/verdicts/evidence.py",
        "        for window in reversed(eligible[:-1]):\n",
        "        for window in eligible[:-1]:\n",
        ("tests/unit/analysis/test_zones.py",),
    ),
    Mutation(
        "zones: a collapse read on a window past half the gates",
        "analysis/verdicts/zones.py",
        "    window = evidence.deciding(True)\n",
        "    window = evidence.deciding(False)\n",
        ("tests/unit/analysis/test_zones.py",),
    ),
    Mutation(
        "evidence: a window short of half the trials kept as evidence",
        "analysis/verdicts/evidence.py",
        "if sums.y <= 0 or sums.y < cfg.min_trials / 2 or",
        "if sums.y <= 0 or",
        ("tests/unit/analysis/test_zones.py",),
    ),
    Mutation(
        "goodput: the draft cost read across load buckets",
        "analysis/speed/goodput.py",
        "drafted, at = sum(record.spec.drafted), self._loads.index(flight)",
        "drafted, at = sum(record.spec.drafted), 0",
        ("tests/unit/analysis/test_draft_cost.py",),
    ),
    Mutation(
        "draft cost: the spread bar on the variance, not the sd",
        "analysis/speed/draft_cost.py",
        "    if spread < MIN_SPREAD**2:\n",
        "    if spread < MIN_SPREAD:\n",
        ("tests/unit/analysis/test_draft_cost.py",),
    ),
    Mutation(
        "draft cost: each request weighted 1, not by its steps",
        "analysis/speed/draft_cost.py",
        "moments.add(drafted / steps, seconds / steps, float(steps))",
        "moments.add(drafted / steps, seconds / steps, 1.0)",
        ("tests/unit/analysis/test_draft_cost.py",),
    ),
    Mutation(
        "goodput compare: only the after side held to the minimum requests",
        "analysis/compare/goodput.py",
        "            for i in (0, 1)\n",
        "            for i in (1,)\n",
        ("tests/unit/analysis/test_goodput.py",),
    ),
    Mutation(
        "goodput compare: a model's cells merged twice where the slices are the models",
        "analysis/compare/goodput.py",
        "        for key in {cell[:-1], cell[:1]}:",
        "        for key in (cell[:-1], cell[:1]):",
        ("tests/unit/analysis/test_goodput.py",),
    ),
    Mutation(
        "goodput compare: the family over every slice seen, not those compared",
        "analysis/compare/goodput.py",
        "    families = Counter(key[0] for key in chosen)\n",
        "    families = Counter(key[0] for key in groups)\n",
        ("tests/unit/analysis/test_goodput.py",),
    ),
    Mutation(
        "goodput compare: a side's log variance without n / (n - 1)",
        "analysis/compare/same_load.py",
        "    return n / max(1.0, n - 1.0) * spread.deviation * sums.yy / (sums.y * sums.y)",
        "    return spread.deviation * sums.yy / (sums.y * sums.y)",
        ("tests/unit/analysis/test_goodput.py",),
    ),
    Mutation(
        "goodput compare: a cell's own spread on n, not n - 1, degrees of freedom",
        "analysis/compare/same_load.py",
        "    return Spread(_deviation(s) / s.yy, max(1.0, s.requests - 1.0))",
        "    return Spread(_deviation(s) / s.yy, max(1.0, s.requests))",
        ("tests/unit/analysis/test_goodput.py",),
    ),
    Mutation(
        "goodput compare: slower on the estimate (unit case)",
        "analysis/compare/goodput.py",
        "    if ratio.lower > 1.0:\n",
        "    if ratio.estimate > 1.0:\n",
        ("tests/unit/analysis/test_goodput.py",),
    ),
    Mutation(
        "causes: not_drafting on every slice of the model, those that draft included",
        "analysis/causes/rules.py",
        '        if idle is not None and (rollup or key.ctx_bucket in idle["ctx_buckets"]):',
        "        if idle is not None:",
        ("tests/unit/analysis/test_causes.py",),
    ),
    Mutation(
        "canary: acceptance pages where the configs speculate differently (unit case)",
        "gen/canary.py",
        "template = SAME_SPECULATION if same else OTHER_SPECULATION",
        "template = OTHER_SPECULATION if same else SAME_SPECULATION",
        ("tests/unit/gen/test_canary.py",),
    ),
    Mutation(
        "goodput (PromQL): the canary compared with the stable config of fewest requests",
        "gen/canary.py",
        '      topk by (${pair}) (1, ${trials}{track="${stable}"}),',
        '      bottomk by (${pair}) (1, ${trials}{track="${stable}"}),',
        ("tests/artifacts/test_generate.py::test_the_hand_written_promtool_tests_pass",),
    ),
    Mutation(
        "goodput (PromQL): the stable side not held to the minimum requests",
        "gen/goodput_rules.py",
        '    and on(${labels}) ${requests}{side="${stable}"} >= ${least}\n',
        '    and on(${labels}) ${requests}{side="${stable}"} >= 0\n',
        ("tests/artifacts/test_generate.py::test_the_hand_written_promtool_tests_pass",),
    ),
    Mutation(
        "K table: a load bucket measured where only one side timed the minimum",
        "analysis/speed/load.py",
        "    if cell.spec.requests >= min_requests and cell.baseline.requests >= min_requests:",
        "    if cell.spec.requests >= min_requests or cell.baseline.requests >= min_requests:",
        ("tests/unit/analysis/test_load.py",),
    ),
)


def run(mutation: Mutation, root: Path) -> bool:
    """True when a test failed (the mutation was caught), in the copy at `root`."""
    path = root / "agent" / "specwatch" / mutation.path
    source = path.read_text()
    if source.count(mutation.old) != 1:
        raise SystemExit(f"{mutation.name}: the original is not in {mutation.path} exactly once")
    path.write_text(source.replace(mutation.old, mutation.new))
    env = {**os.environ, "PYTHONPATH": str(root / "agent")}
    # A generator's mutation is judged on the files it writes: they are written again first,
    # so that the promtool suites, not the staleness check, must catch it.
    generated = mutation.path.startswith("gen/")
    try:
        if generated:
            regenerate(root, env)
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", *mutation.tests],
            cwd=root, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
    finally:
        path.write_text(source)
        if generated:
            regenerate(root, env)
    return result.returncode != 0


def regenerate(root: Path, env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "specwatch", "generate"]
    subprocess.run(command, cwd=root, env=env, capture_output=True, check=True)


def copy_of_checkout(into: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", ".venv*", "__pycache__", ".hypothesis", "build")
    return Path(shutil.copytree(ROOT, into / "checkout", ignore=ignore))


def main() -> int:
    wanted = set(sys.argv[1:])
    survived = 0
    with tempfile.TemporaryDirectory(prefix="specwatch-mutations-") as scratch:
        root = copy_of_checkout(Path(scratch))
        for mutation in MUTATIONS:
            if wanted and mutation.name not in wanted:
                continue
            caught = run(mutation, root)
            survived += not caught
            print(f"{'caught  ' if caught else 'SURVIVED'}  {mutation.name}", flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
