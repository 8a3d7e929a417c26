"""Mutation testing of the rule modules with mutmut (pinned in pyproject's `dev` extra).

    .venv/bin/python tools/mutate.py [PART ...] [--workdir DIR] [--max-children N] [--docs]
    make mutations                      # every part, then docs/mutations.md's table

A part is a set of modules and the fast tests that cover them (PARTS below). mutmut makes every
single-line mutant of each function (operators, comparisons, constants, arguments, ...), records
which tests run which function, and runs for each mutant only the tests that reach it, in
forked workers: the whole of analysis/ (about 7,000 mutants) in under half an hour on 2 cores.

mutmut reads a package from `src/`, and runs from the directory it mutates in: the part is
staged in a scratch copy of the checkout (agent/specwatch as src/specwatch, the tests and the
files they read), never in the checkout itself.

A mutant no test can tell from the original (an equivalent mutant) is not a gap: EQUIVALENT
lists those by module and mutated line with why, and the kill rate leaves them out. Every
other survivor is printed with its diff. Exit 1 when a part's kill rate is below its target.

tools/mutations.py keeps the mutations mutmut cannot make (a line removed, a loop reversed, a
whole condition replaced) and those caught only by the integration tests over a socket.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Part:
    modules: tuple[str, ...]  # globs under agent/specwatch
    tests: tuple[str, ...]  # what mutmut runs (each mutant: those of them that reach it)
    target: float  # the kill rate this part is held to
    # tests left out: whole-pipeline properties that take minutes under mutmut's trampolines
    # and whose lines the fast tests reach (each named with why in docs/mutations.md)
    deselect: tuple[str, ...] = ()


ANALYSIS_TESTS = ("tests/unit/analysis", "tests/unit/store", "tests/unit/engines")
# Whole-pipeline properties, minutes each under mutmut's trampolines (3 of the 4 minutes of the
# part's tests): every mutant of a function they reach would run them. The rules they pass
# through have tests of their own; these hold the pipeline's bookkeeping (views, quiet slices).
HEAVY = (
    "tests/unit/analysis/test_analyzer.py::test_a_snapshot_keeps_a_finer_slices_view_only",
    "tests/unit/analysis/test_analyzer.py::test_a_snapshot_is_what_it_was_whatever",
    "tests/unit/analysis/test_analyzer.py::test_passing_over_quiet_slices_changes_no_zone",
    # Whole-path tests of seconds each under the trampolines (a cycle log through the CLI, every
    # accepted input through every output, the log decoder against its checks): every mutant of
    # a function on their path ran them all (the speed and causes part slowed to 20 mutants a
    # minute with two fifths to go). The rules on that path have unit cases of their own
    # (test_load_edges, test_speed_edges, ...).
    "tests/unit/analysis/test_load.py::test_the_load_window_forgets_and_metrics_carry_every_load_bucket",
    "tests/unit/analysis/test_load.py::test_advise_gives_vllm_a_schedule_that_turns_speculation_off_where_it_is_slower",
    "tests/unit/analysis/test_accepted_inputs.py::test_every_accepted_record_goes_through_analysis_and_every_output",
    "tests/unit/store/test_cyclelog.py::test_the_fast_decoder_reads_every_line_as_the_checks_do",
)


def _gen(*names: str) -> tuple[str, ...]:
    return tuple(f"gen/{name}.py" for name in names)


GEN_TESTS = (
    "tests/unit/gen",
    "tests/artifacts/test_generate.py",
    "tests/artifacts/test_rules.py",
    "tests/artifacts/test_crds.py",
    "tests/artifacts/test_dashboards.py",
    "tests/artifacts/test_hygiene.py",
)
# Left out of the gen parts: the committed copies against the generator (any change of output
# fails it, a rule's or a word's alike: a survivor that changes words only is counted apart,
# `read_outputs`); the CLI's generate and its errors (cli/, not gen/: gen/writer's write and
# stale have unit cases); the kustomize overlay (it builds the committed files, not the
# generator's). Each of the last three took 1 to 2 seconds a mutant.
GEN_LEFT_OUT = (
    "tests/artifacts/test_generate.py::test_the_committed_files_are_what_generate_writes",
    "tests/artifacts/test_generate.py::test_generate_check_fails_on_a_stale_file_and_says_what_to_run",
    "tests/artifacts/test_generate.py::test_an_out_directory_that_cannot_be_written_is_one_clear_line",
    "tests/artifacts/test_crds.py::test_on_a_default_kube_prometheus_stack_every_part_is_where_the_stack_looks",
)

PARTS = {
    # analysis/ in three parts, each under half an hour here (mutmut runs the part's tests once
    # to learn which reach what, then each mutant's): the counting and the analyzer, the
    # verdicts and drift, then the speed, causes and comparisons. The tests of the store and the
    # engines reach what analysis/ keeps and reads.
    "analysis-counting": Part(
        (
            "analysis/analyzer.py",
            "analysis/replay.py",
            "analysis/view_cache.py",
            "analysis/views.py",
            "analysis/counting/*",
        ),
        ANALYSIS_TESTS,
        0.90,
        HEAVY,
    ),
    "analysis-verdicts": Part(
        ("analysis/verdicts/*", "analysis/drift/*"), ANALYSIS_TESTS, 0.90, HEAVY
    ),
    "analysis-rules": Part(
        ("analysis/speed/*", "analysis/causes/*", "analysis/compare/*"),
        ANALYSIS_TESTS,
        0.90,
        HEAVY,
    ),
    # gen/ in four parts: the files around the rules (dashboards, Alertmanager's config, the
    # writer), the alerts, the canary's rules, the zones' and the causes' rules. Each mutant
    # runs the tests that render it; the promtool tests run only their cases that reach a rule
    # the mutant changed (tests/support/promtool.py); a survivor whose files are the original's
    # byte for byte, or differ in words alone, is told apart afterwards (`read_outputs`).
    "gen-files": Part(
        _gen("alertmanager", "dashboards", "overview_rows", "panels", "writer"),
        GEN_TESTS,
        0.90,
        GEN_LEFT_OUT,
    ),
    "gen-alerts": Part(
        _gen("alert", "alert_rules", "goodput_alert", "latency_slo", "ops_alerts", "speed_alerts"),
        GEN_TESTS,
        0.90,
        GEN_LEFT_OUT,
    ),
    "gen-canary": Part(
        _gen("canary", "goodput_cells", "goodput_factors", "goodput_rules", "rollout"),
        GEN_TESTS,
        0.90,
        GEN_LEFT_OUT,
    ),
    "gen-rules": Part(
        _gen("causes", "promql", "rules", "template", "zone_rules"), GEN_TESTS, 0.90, GEN_LEFT_OUT
    ),
    "engines": Part(("engines/*",), ("tests/unit/engines", "tests/unit/proxy"), 0.0),
    "rewriter": Part(("proxy/stream.py", "proxy/sse.py"), ("tests/unit/proxy",), 0.0),
}

# Equivalent mutants: (module under agent/specwatch, the original line, the mutated line) ->
# why no test can tell them apart. Lines are compared stripped.
_NO_SPREAD = (
    "shares is 0 only where both sides have no variance; then the interval's half width is"
    " t x sqrt(0) = 0 whatever the degrees of freedom: the fallback df is never read"
)
_VERSION = "a change counter stepped by another amount still differs after each change"
_TRUNCATES = (
    "int() truncates toward 0 as // floors for the records' times, which are never negative"
)
_PERIOD = (
    "first, last = int(start // self._cfg.bucket_seconds), int(end // self._cfg.bucket_seconds)"
)


def _unread_df(module: str, line: str) -> dict[tuple[str, str, str], str]:
    """The fallback degrees of freedom `... a + b - 2 ...` of `line`, mutated three ways (+ 2,
    - 3, a - b): read only where there is no variance (`_NO_SPREAD`)."""
    total = line[line.index("float(") :]
    plus = total[: total.index(" - 2")].rsplit(" + ", 1)
    mutants = (
        line.replace(" - 2", " + 2"),
        line.replace(" - 2", " - 3"),
        line.replace(" + ".join(plus), " - ".join(plus)),
    )
    return {(module, line, mutant): _NO_SPREAD for mutant in mutants}


# Lines listed below that occur more than once in their module: the reason holds at each.
EVERY_OCCURRENCE = {
    ("analysis/analyzer.py", "self._changes += 1"),
    ("analysis/counting/slicing.py", "_interned[0] += 1"),
}
EQUIVALENT: dict[tuple[str, str, str], str] = {
    **_unread_df(
        "analysis/compare/alpha.py",
        "df = total * total / shares if shares > 0"
        " else float(before.requests + after.requests - 2)",
    ),
    **_unread_df(
        "analysis/speed/speedup.py",
        "df = total * total / shares if shares > 0"
        " else float(spec.requests + baseline.requests - 2)",
    ),
    **{
        ("analysis/analyzer.py", "self._changes += 1", f"self._changes {step}"): _VERSION
        for step in ("-= 1", "+= 2")
    },
    (
        "analysis/speed/load.py",
        "below = [j for j in known if j < i]",
        "below = [j for j in known if j <= i]",
    ): "i is a bucket without evidence, so never in `known`: j <= i and j < i pick the same",
    (
        "analysis/speed/load.py",
        "index = int(ts // self._period)",
        "index = int(ts / self._period)",
    ): _TRUNCATES,
    (
        "analysis/causes/positions.py",
        "break  # later cut points only have less after them",
        "return  # later cut points only have less after them",
    ): "found is None there either way; returning skips only the cache of that None",
    **{
        (
            "analysis/causes/positions.py",
            "if len(positions) < 2 or positions[0][0] < MIN_TRIED:",
            f"if len(positions) < 2 or {mutated} < MIN_TRIED:",
        ): (
            "the steps trying a position are at most those accepting the one before (and so"
            " those trying it): below MIN_TRIED there, every later position is too, and no"
            " later one can be measured"
        )
        for mutated in ("positions[1][0]", "positions[0][1]")
    },
    **{
        (
            "analysis/compare/same_load.py",
            "if yy > 0 and math.isfinite(deviation)",
            mutated,
        ): (
            "yy sums the squared decode tokens of timed cells (y > 0, whole tokens): it is at"
            " least 2 wherever a slice has a spread, so yy > 0, >= 0 and > 1 agree"
        )
        for mutated in (
            "if yy > 0 or math.isfinite(deviation)",
            "if yy >= 0 and math.isfinite(deviation)",
            "if yy > 1 and math.isfinite(deviation)",
        )
    },
    (
        "analysis/compare/same_load.py",
        "if not isinstance(s, DecodeSums) or s.yb <= 0 or not timed(s, 2):",
        "if not isinstance(s, DecodeSums) or s.yb <= 1 or not timed(s, 2):",
    ): "yb sums tokens x loads, each at least 1 where recorded: 0 or at least 1, never between",
    **{
        (
            "analysis/speed/load.py",
            "if min(spec.requests, base.requests) < min_requests or spec.y <= 0 or base.x <= 0:",
            mutated,
        ): "a baseline without time reaches cost_from_times, which gives None for it too"
        for mutated in (
            "if min(spec.requests, base.requests) < min_requests or spec.y <= 0 and base.x <= 0:",
            "if min(spec.requests, base.requests) < min_requests or spec.y <= 0 or base.x < 0:",
        )
    },
    (
        "analysis/speed/load.py",
        "else (-1, None, None, None, None)",
        "else (-2, None, None, None, None)",
    ): "a bucket without evidence is any negative K (_fill_gaps reads K < 0)",
    (
        "analysis/speed/load.py",
        "return -1, None, None, None, None  # no speculative steps here: a neighbour's K",
        "return -2, None, None, None, None  # no speculative steps here: a neighbour's K",
    ): "a bucket without evidence is any negative K (_fill_gaps reads K < 0)",
    **{
        ("analysis/speed/draft_cost.py", "if m.n < MIN_REQUESTS or total <= 0 or not finite:", m): (
            "past the request gate total sums 30 or more requests' steps (each at least 1): it"
            " is never at or below 1"
        )
        for m in (
            "if m.n < MIN_REQUESTS or total < 0 or not finite:",
            "if m.n < MIN_REQUESTS or total <= 1 or not finite:",
        )
    },
    **{
        ("analysis/speed/draft_cost.py", "if det <= 0:", m): (
            "det = total^2 x spread, past the spread gate at least 30^2 x 0.5^2 = 225"
        )
        for m in ("if det < 0:", "if det <= 1:")
    },
    **{
        ("analysis/speed/k0_cost.py", old, new): "a slot the plane never reads"
        for old, new in (
            ("rhs = [0.0] * 3", "rhs = [0.0] * 4"),
            ("meat = [[0.0] * 3 for _ in range(3)]", "meat = [[0.0] * 4 for _ in range(3)]"),
            ("meat = [[0.0] * 3 for _ in range(3)]", "meat = [[0.0] * 3 for _ in range(4)]"),
        )
    },
    **{
        (
            "analysis/speed/k0_cost.py",
            "self._versions[model] = self._versions.get(model, 0) + 1",
            m,
        ): _VERSION
        for m in (
            "self._versions[model] = self._versions.get(model, 0) - 1",
            "self._versions[model] = self._versions.get(model, 1) + 1",
            "self._versions[model] = self._versions.get(model, 0) + 2",
        )
    },
    **{
        ("analysis/compare/factors.py", line, line.replace(", key)", ", )")): (
            "a factor's pair keeps its slice only for factor_pairs, which reads TPOT's pairs,"
            " never a factor's"
        )
        for line in (
            "Pair(b.step_time(), a.step_time(), pair.bucket, pair.shift, cost, pair.weight, key)",
            "Pair(b.tokens_per_step(), a.tokens_per_step(), pair.bucket, 0.0, made, pair.weight,"
            " key)",
        )
    },
    **{
        ("analysis/drift/baseline.py", old, new): (
            "vu[0] is never read: the square uses uv[0], the lags vu[k] from k = 1 (vu[0] is"
            " kept only beside its three siblings)"
        )
        for old, new in (
            ("vu[0] += v * u", "vu[0] = v * u"),
            ("vu[0] += v * u", "vu[0] -= v * u"),
            ("vu[0] += v * u", "vu[0] += v / u"),
            ("vu[0] -= v * u", "vu[0] = v * u"),
            ("vu[0] -= v * u", "vu[0] += v * u"),
            ("vu[0] -= v * u", "vu[0] -= v / u"),
        )
    },
    **{
        ("analysis/counting/counts.py", old, new): (
            "only leaves the one-K fast path: the general path counts the same steps alike"
        )
        for old, new in (
            ("k = drafted[0]", "k = None"),
            (
                "if k and drafted.count(k) == n:  # one K (the usual case)",
                "if k and drafted.count(None) == n:  # one K (the usual case)",
            ),
        )
    },
    **{
        (
            "analysis/counting/engine.py",
            "def observe(self, sample: EngineSample, seen: int = 0, seen_steps: int = 0) -> None:",
            m,
        ): "a default the analyzer never uses: it passes both counts"
        for m in (
            "def observe(self, sample: EngineSample, seen: int = 1, seen_steps: int = 0) -> None:",
            "def observe(self, sample: EngineSample, seen: int = 0, seen_steps: int = 1) -> None:",
        )
    },
    (
        "analysis/replay.py",
        "next_evaluation = start + interval",
        "next_evaluation = start - interval",
    ): (
        "the same grid of evaluation times, one interval longer: the two extra ones come"
        " before the first record, on an analysis that holds nothing"
    ),
    (
        "analysis/replay.py",
        "with heap.paused(freeze=True) as frozen:",
        "with heap.paused(freeze=False) as frozen:",
    ): "the collector's work only (the records frozen out of its view): the analysis alike",
    **{
        ("analysis/counting/slicing.py", "_interned[0] += 1", m): (
            "the count only caps how many keys are kept for reuse (65,536): a key is the same"
            " value kept or not"
        )
        for m in ("_interned[0] = 1", "_interned[0] -= 1", "_interned[0] += 2")
    },
    (
        "analysis/verdicts/evidence_windows.py",
        'entry.buckets[-1] = (index, array("q", values))',
        'entry.buckets[-1] = (index, array("Q", values))',
    ): "a sealed bucket's counts are never negative: signed or unsigned 64-bit hold them alike",
    **{
        ("analysis/drift/detector.py", _PERIOD, m): _TRUNCATES
        for m in (
            _PERIOD.replace("int(start // ", "int(start / "),
            _PERIOD.replace("int(end // ", "int(end / "),
        )
    },
    **{
        (
            "analysis/verdicts/zones.py",
            'if evidence.decided("green", cfg.bar("green"), True, within) > 0:',
            f'if evidence.decided("green", cfg.bar("{name}"), True, within) > 0:',
        ): 'Thresholds.bar gives the green bar for any name but "red"'
        for name in ("XXgreenXX", "GREEN")
    },
    **_unread_df(
        "analysis/compare/goodput.py",
        "else float(sum(p.before.requests + p.after.requests - 2 for p in rows))",
    ),
    (
        "analysis/compare/goodput.py",
        "moved[pair.bucket] += w * pair.shift",
        "moved[pair.bucket] -= w * pair.shift",
    ): "the lever enters the variance squared: its sign is lost either way",
    **{
        ("analysis/compare/goodput.py", "if not rows or total <= 0:", m): (
            "rows are cells both sides timed (two requests or more, a decode token each at"
            " least): each weighs 2 or more, so the total is at most 1 only without rows"
        )
        for m in (
            "if not rows and total <= 0:",
            "if not rows or total < 0:",
            "if not rows or total <= 1:",
        )
    },
    (
        "analysis/compare/goodput.py",
        "for i in (0, 1)",
        "for i in (0, 2)",
    ): "i only chooses a side by its truth: 2, like 1, is the after side",
    (
        "analysis/speed/goodput.py",
        "if sums.requests < 2 or sums.x <= 0 or sums.y <= 0:",
        "if sums.requests < 2 or sums.x < 0 or sums.y <= 0:",
    ): "no decode time makes a TPOT of 0, which the next check (0 < ratio) refuses",
    (
        "analysis/speed/speedup.py",
        "return hash(tuple(None if value != value else value for value in self._fields()))",
        "return hash(None)",
    ): "every gain hashing alike still hashes equal gains alike: only dict speed differs",
    (
        "analysis/speed/speedup.py",
        "return hash(tuple(None if value != value else value for value in self._fields()))",
        "return hash(tuple(None if (value != value) or True else value"
        " for value in self._fields()))",
    ): "every gain hashing alike still hashes equal gains alike: only dict speed differs",
    **{
        (module, line, line.replace(">= bool", ">= BOOL")): (
            "PromQL's keywords are read in any case (promtool evaluates `a >= BOOL 1` as"
            " `a >= bool 1`)"
        )
        for module, line in (
            ("gen/goodput_cells.py", 'both=joined(n, ">= bool", n),'),
            ("gen/canary.py", 'both=joined(trials, ">= bool", trials),'),
        )
    },
    (
        "gen/alertmanager.py",
        '{"matchers": [\'severity="warning"\'], "receiver": "specwatch-warning"},',
        '{"matchers": [\'SEVERITY="WARNING"\'], "receiver": "specwatch-warning"},',
    ): (
        "a warning the sub-route no longer matches falls to the root route, whose receiver is"
        " specwatch-warning too, with the same grouping and timings"
    ),
    (
        "gen/canary.py",
        'extra_labels={"track": CANARY},',
        "",
    ): (
        "the alert's series are the canary's difference, recorded with track=\"canary\" and kept"
        " by its `on(..., track, ...)`: the label is on every alert without the rule's"
    ),
}


def equivalent_kind(old: str, new: str) -> str | None:
    """A class of mutants equivalent wherever it occurs, with why; None for any other."""
    if "strict=True" in old and new in {
        old.replace("strict=True", loosened) for loosened in ("strict=False", "strict=None", "")
    }:
        # zip(..., strict=True) is written where both sides have one length by construction
        # (the check guards the code that builds them): loosened, no input can tell
        return "zip's strict check loosened where the lengths are equal by construction"
    return None


# what tests read beside the package (the generated artifacts, the docs they check)
ALSO_COPY: tuple[str, ...] = ("alerts", "dashboards", "deploy", "docs", "benchmarks", "tools")
ALSO_COPY += ("fuzz", "setup.py", "Makefile", "README.md", "CHANGELOG.md")

CAUGHT = ("killed", "timeout", "caught by type check")  # mutmut's statuses a test (or mypy) made
NOT_RUN = "not checked"  # a mutant a stopped run never reached
# gen/: a survivor that changes only the words a person reads in the generated files, or their
# layout (held by the committed copies and their review, not by a rule's test): counted apart
WORDS = "words or layout only"


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    survivors: list[tuple[str, str, str]] = field(default_factory=list)  # mutant, diff, status

    @property
    def scored(self) -> int:
        left_out = self.counts["equivalent"] + self.counts[WORDS] + self.counts[NOT_RUN]
        return sum(self.counts.values()) - left_out

    @property
    def caught(self) -> int:
        return sum(self.counts[status] for status in CAUGHT)

    @property
    def rate(self) -> float:
        return self.caught / self.scored if self.scored else 1.0


def stage(part: Part, into: Path) -> None:
    """A copy of the checkout as it is (uncommitted edits included), the package under src/."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in listed:
        source = ROOT / name
        if not source.is_file():
            continue  # deleted in the work tree
        target = into / (
            "src" / Path(name).relative_to("agent") if name.startswith("agent/") else name
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    config = [
        "",
        "[tool.mutmut]",
        'source_paths = ["src/specwatch"]',
        f"only_mutate = {json.dumps([f'src/specwatch/{glob}' for glob in part.modules])}",
        f"pytest_add_cli_args_test_selection = {json.dumps(list(part.tests))}",
        "pytest_add_cli_args = "
        + json.dumps(
            ["-p", "no:randomly", "-q", "-x", *(f"--deselect={d}" for d in part.deselect)]
        ),
        f"also_copy = {json.dumps(list(ALSO_COPY))}",
        f"type_check_command = {json.dumps(type_check(part, into))}",
        "",
    ]
    with (into / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n".join(config))


def type_check(part: Part, into: Path) -> list[str]:
    """mypy --strict over the part's mutants, as CI checks the code: a mutant it rejects cannot
    land, so it is caught there ("caught by type check"), before any test runs. Two of its
    codes are off, for what mutmut's layout makes of every mutant (the original passes them):
    an `__init__`'s attributes declared again in each mutant copy, the trampolines' ignores."""
    (into / "mutmut-mypy.ini").write_text(
        "[mypy]\nstrict = True\npython_version = 3.11\nmypy_path = src\n"
        "plugins = pydantic.mypy\ndisable_error_code = no-redef, unused-ignore\n"
    )
    paths = [
        f"src/specwatch/{glob.removesuffix('/*')}" for glob in part.modules
    ]  # directories (a `dir/*` glob) and modules, as mypy takes them
    config = str(into / "mutmut-mypy.ini")
    return ["mypy", "--output", "json", "--config-file", config, "--no-incremental", *paths]


def tally(workdir: Path) -> dict[str, Tally]:
    """Per module (under agent/specwatch), how its mutants fared; survivors with their diffs."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant  # mutmut's own, where it ran
    from mutmut.stats import status_by_exit_code

    tallies: dict[str, Tally] = {}
    package = workdir / "mutants" / "src" / "specwatch"
    cwd = Path.cwd()
    os.chdir(workdir)
    try:
        for meta in sorted(package.rglob("*.py.meta")):
            module = meta.relative_to(package).as_posix().removesuffix(".meta")
            exits = json.loads(meta.read_text())["exit_code_by_key"]
            if not exits:
                continue
            entry = tallies.setdefault(module, Tally())
            source = Path("src/specwatch") / module
            for mutant, code in exits.items():
                status = status_by_exit_code[code]
                if status in (*CAUGHT, NOT_RUN):
                    entry.counts[status] += 1
                    continue
                diff = get_diff_for_mutant(mutant, path=source)
                old, new = changed(diff)
                reason = EQUIVALENT.get((module, old, new)) or equivalent_kind(old, new)
                entry.counts["equivalent" if reason else status] += 1
                if not reason:
                    entry.survivors.append((mutant, diff, status))
    finally:
        os.chdir(cwd)
    read_outputs(workdir, tallies)
    return tallies


def read_outputs(workdir: Path, tallies: dict[str, Tally]) -> None:
    """gen/'s survivors by what they change in the generated files (tools/mutate_gen.py): the
    same files is an equivalent mutant, words only is counted apart (WORDS), the rest stay."""
    survivors = [m for module, e in tallies.items() if module.startswith("gen/")
                 for m, _, _ in e.survivors]  # fmt: skip
    if not survivors:
        return
    found = json.loads(
        subprocess.run(
            [sys.executable, str(ROOT / "tools" / "mutate_gen.py"), *survivors],
            cwd=workdir / "mutants",
            env={**os.environ, "PYTHONPATH": "src"},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    for entry in tallies.values():
        kept = []
        for mutant, diff, status in entry.survivors:
            kind = found.get(mutant, "output")
            if kind == "output":
                kept.append((mutant, diff, status))
                continue
            entry.counts[status] -= 1
            entry.counts["equivalent" if kind == "same" else WORDS] += 1
        entry.survivors = kept


def changed(diff: str) -> tuple[str, str]:
    """The original and mutated line of a one-line mutant's diff."""
    old = [line[1:].strip() for line in diff.splitlines() if line[:1] == "-" and line[:3] != "---"]
    new = [line[1:].strip() for line in diff.splitlines() if line[:1] == "+" and line[:3] != "+++"]
    return " / ".join(old), " / ".join(new)


def run_part(name: str, part: Part, workdir: Path, children: int) -> tuple[dict[str, Tally], float]:
    if any(glob.startswith("gen/") for glob in part.modules):
        # the promtool tests skip the cases whose rules are the committed ones: those must be
        # what the generator writes (and pass, as the full suite checks)
        check = [str(BIN / "specwatch"), "generate", "--check"]
        if subprocess.run(check, cwd=ROOT, check=False).returncode != 0:
            raise SystemExit(f"{name}: the committed files are stale: run `specwatch generate`")
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    stage(part, workdir)
    started = time.monotonic()
    log = workdir / "mutmut.log"
    # mutmut runs `mypy` by name; the tests read MUTATION_TESTING (fewer, fixed examples)
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "MUTATION_TESTING": "1",
    }
    with log.open("w") as out:
        ran = subprocess.run(
            [str(BIN / "mutmut"), "run", "--max-children", str(children)],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.monotonic() - started
    if ran.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"mutmut failed on {name} (exit {ran.returncode}), log {log}:\n{tail}")
    return tally(workdir), seconds


def part_rows(name: str, tallies: dict[str, Tally], seconds: float | None) -> list[str]:
    whole = Tally()
    for entry in tallies.values():
        whole.counts.update(entry.counts)
    took = "" if seconds is None else f" ({seconds / 60:.0f} min)"
    rows = [row(f"**{name}**{took}", whole)]
    return rows + [row(module, entry) for module, entry in sorted(tallies.items())]


def row(label: str, entry: Tally) -> str:
    total = sum(entry.counts.values())
    missed = entry.scored - entry.caught
    rate = f"{100 * entry.rate:.1f}%" if entry.scored else "-"
    return (
        f"| {label} | {total} | {entry.caught} | {entry.counts['equivalent']} "
        f"| {entry.counts[WORDS]} | {missed} | {entry.counts[NOT_RUN]} | {rate} |"
    )


HEADER = (
    "| part / module | mutants | killed | equivalent | words or layout | survived | not run "
    "| kill rate |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
)


def write_docs(name: str, rows: list[str]) -> None:
    """The part's rows into docs/mutations.md's table, the other parts' rows kept."""
    doc = ROOT / "docs" / "mutations.md"
    text = doc.read_text()
    begin, end = "<!-- mutations:begin -->", "<!-- mutations:end -->"
    head, _, rest = text.partition(begin)
    table, _, tail = rest.partition(end)
    parts: dict[str, list[str]] = {}
    current = None
    for line in table.strip().splitlines():
        if line.count("|") == 8:  # a row from before the words column: none there
            line = "|".join([*line.split("|")[:5], " 0 ", *line.split("|")[5:]])
        if line.startswith("| **"):
            current = line[4:].split("**")[0]
            parts[current] = []
        if current is not None:
            parts[current].append(line)
    parts[name] = rows
    lines = [*HEADER, *(line for part in parts.values() for line in part)]
    doc.write_text(f"{head}{begin}\n" + "\n".join(lines) + f"\n{end}{tail}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", help=f"of {', '.join(PARTS)} (default: all)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path.home() / ".cache" / "specwatch-mutants",
        help="where each part is staged and kept (mutmut show / browse there): %(default)s",
    )
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--docs", action="store_true", help="write the table to docs/mutations.md")
    parser.add_argument(
        "--no-run", action="store_true", help="tally what --workdir holds (mutmut run there)"
    )
    args = parser.parse_args()
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        parser.error(f"no part {', '.join(sorted(unknown))}: the parts are {', '.join(PARTS)}")
    args.parts = args.parts or list(PARTS)
    base: Path = args.workdir
    short = False
    for name in args.parts:
        part = PARTS[name]
        if args.no_run:
            tallies, seconds = tally(base / name), None
        else:
            tallies, seconds = run_part(name, part, base / name, args.max_children)
        survivors = base / name / "survivors.txt"
        with survivors.open("w") as out:
            for module, entry in sorted(tallies.items()):
                for mutant, diff, _ in entry.survivors:
                    out.write(f"# {module} {mutant}\n{diff}\n\n")
        whole = Tally()
        for entry in tallies.values():
            whole.counts.update(entry.counts)
        short |= whole.rate < part.target
        rows = part_rows(name, tallies, seconds)
        print("\n".join((*HEADER, *rows)))
        print(
            f"{name}: {whole.caught} of {whole.scored} caught ({100 * whole.rate:.1f}%, "
            f"target {100 * part.target:.0f}%); survivors with their diffs in {survivors}",
            flush=True,
        )
        if args.docs:
            write_docs(name, rows)
    return 1 if short else 0


if __name__ == "__main__":
    raise SystemExit(main())
