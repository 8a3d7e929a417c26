"""llama.cpp's server: what its responses say of speculation.

Every response (and a stream's finishing chunk) carries `timings`; with speculation on, its
`draft_n` and `draft_n_accepted` are the request's drafted and accepted tokens (tools/server/
server-common.cpp, `server_slot_stats::to_json`; both left out when nothing was drafted). That
is all it sends per request: no steps, no histogram. The steps it verified are counted only in
its log line and its `/metrics` (`llamacpp:spec_decode_num_drafts_total`), and are not
`predicted_n - draft_n_accepted` (steps may draft nothing), so they are left unknown: the rate
is read from a llama.cpp request, alpha-hat and tau are not (core/records.SpecTotals).
"""

from __future__ import annotations

from typing import Any

from specwatch.core.records import SpecTotals
from specwatch.engines import Contradiction, Unreadable
from specwatch.engines.fields import count as _count

ENGINE = "llamacpp"


def is_llamacpp(obj: dict[str, Any]) -> bool:
    """A response of llama.cpp's server: `timings` with its `predicted_n`."""
    timings = obj.get("timings")
    return isinstance(timings, dict) and "predicted_n" in timings


def totals(obj: dict[str, Any]) -> SpecTotals:
    """The request's totals from `timings` (is_llamacpp(obj) holds). Absent draft fields are
    nothing drafted (the server leaves them out then); present ones must be counts, accepted
    no more than drafted and no more than the tokens generated."""
    timings = obj["timings"]
    if "draft_n" not in timings and "draft_n_accepted" not in timings:
        return SpecTotals(0, 0, engine=ENGINE)
    drafted, accepted = _count(timings.get("draft_n")), _count(timings.get("draft_n_accepted"))
    predicted = _count(timings.get("predicted_n"))
    if drafted is None or accepted is None:
        raise Unreadable("timings.draft_n / draft_n_accepted are not counts")
    if accepted > drafted:
        raise Contradiction(f"draft_n_accepted {accepted} > draft_n {drafted}")
    if predicted is not None and accepted > predicted:
        raise Contradiction(f"draft_n_accepted {accepted} > predicted_n {predicted}")
    return SpecTotals(drafted, accepted, engine=ENGINE)


def tpot_seconds(obj: dict[str, Any]) -> float | None:
    """Decode time per output token as the server timed it: predicted_ms / predicted_n."""
    timings = obj["timings"]
    n, ms = _count(timings.get("predicted_n")), timings.get("predicted_ms")
    if not n or not isinstance(ms, int | float) or isinstance(ms, bool) or not ms >= 0:
        return None
    return float(ms) / 1000.0 / n
