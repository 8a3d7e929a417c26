"""The build's one option: `SPECWATCH_COMPILE=1` compiles with mypyc the modules of `COMPILED`:
the analysis and what the proxy runs per streamed event and per observed request (the
exchange, the client connection, the stream rewriter, the SSE splitter, the response parser,
the record, the latency histograms); without it the wheel is pure Python. Each says so in its
docstring's first words, `[compiled]` (tests/artifacts/test_compiled.py holds the three lists
equal: this one, the docstrings, docs/architecture.md's). Both run the same source and give
the same bytes (tests/e2e/test_wheel.py); compiled, a replay of a cycle log
takes about 60% of the CPU, and observing a request about half (docs/benchmarks.md). The
sidecar's image builds it compiled (Dockerfile).

mypyc type-checks what it compiles, with the project's mypy settings and plugins, so a compiled
build runs without build isolation, in an environment that has the runtime dependencies and
the pinned mypy: `tools/build_compiled.sh` (or `pip wheel --no-build-isolation`).
"""

from __future__ import annotations

import os

from setuptools import Extension, setup

COMPILED = [
    # the analysis, every module (docs/architecture.md, "Writing for the compiled build")
    "agent/specwatch/analysis/analyzer.py",
    "agent/specwatch/analysis/causes/drafting.py",
    "agent/specwatch/analysis/causes/lifetime.py",
    "agent/specwatch/analysis/causes/positions.py",
    "agent/specwatch/analysis/causes/rules.py",
    "agent/specwatch/analysis/compare/alpha.py",
    "agent/specwatch/analysis/compare/changes.py",
    "agent/specwatch/analysis/compare/factors.py",
    "agent/specwatch/analysis/compare/goodput.py",
    "agent/specwatch/analysis/compare/same_load.py",
    "agent/specwatch/analysis/counting/counts.py",
    "agent/specwatch/analysis/counting/engine.py",
    "agent/specwatch/analysis/counting/objectives.py",
    "agent/specwatch/analysis/counting/requests.py",
    "agent/specwatch/analysis/counting/slicing.py",
    "agent/specwatch/analysis/counting/stats.py",
    "agent/specwatch/analysis/counting/sums.py",
    "agent/specwatch/analysis/counting/windows.py",
    "agent/specwatch/analysis/drift/baseline.py",
    "agent/specwatch/analysis/drift/cusum.py",
    "agent/specwatch/analysis/drift/detector.py",
    "agent/specwatch/analysis/drift/mix.py",
    "agent/specwatch/analysis/replay.py",
    "agent/specwatch/analysis/speed/advisor.py",
    "agent/specwatch/analysis/speed/draft_cost.py",
    "agent/specwatch/analysis/speed/goodput.py",
    "agent/specwatch/analysis/speed/k0_cost.py",
    "agent/specwatch/analysis/speed/load.py",
    "agent/specwatch/analysis/speed/speedup.py",
    "agent/specwatch/analysis/verdicts/evidence.py",
    "agent/specwatch/analysis/verdicts/evidence_windows.py",
    "agent/specwatch/analysis/verdicts/judging.py",
    "agent/specwatch/analysis/verdicts/thresholds.py",
    "agent/specwatch/analysis/verdicts/zones.py",
    "agent/specwatch/analysis/view_cache.py",
    "agent/specwatch/analysis/views.py",
    # its turns' clock and the bounds' search, beside it in core/
    "agent/specwatch/core/pacing.py",
    "agent/specwatch/core/search.py",
    # the latency histograms every observed request adds to (interpreted: ~6k instructions)
    "agent/specwatch/core/histogram.py",
    # what the proxy runs per streamed event and per observed request
    "agent/specwatch/proxy/exchange.py",
    # the client connection's callbacks: httptools' per read, write per streamed event
    "agent/specwatch/proxy/server.py",
    "agent/specwatch/proxy/budget.py",
    "agent/specwatch/proxy/wire.py",
    "agent/specwatch/proxy/sse.py",
    "agent/specwatch/proxy/stream.py",
    "agent/specwatch/proxy/observation.py",
    "agent/specwatch/proxy/tasks.py",
    "agent/specwatch/engines/vllm/response.py",
    "agent/specwatch/engines/vllm/usage.py",
    "agent/specwatch/engines/fields.py",
]


def ext_modules() -> list[object]:
    if os.environ.get("SPECWATCH_COMPILE", "") != "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as error:
        raise SystemExit(
            "SPECWATCH_COMPILE=1 needs mypy (with mypyc) in the build environment: "
            "pip install 'mypy==2.4.1', then build with --no-build-isolation"
        ) from error
    # the stream rewriter's per-event byte test, in C (proxy/stream.py says why)
    fastpath = Extension("specwatch.proxy._fastpath", ["agent/specwatch/proxy/_fastpath.c"])
    return [*mypycify(["--config-file", "pyproject.toml", *COMPILED]), fastpath]


setup(ext_modules=ext_modules())
