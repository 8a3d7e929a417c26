"""not_drafting (analysis/causes/drafting.py) at each of its gates, with its whole detail: the
pooled rule (30 requests, 1,000 output tokens, drafted at most 1% of them) and the per-request
one (30 requests long enough to tell, most of them drafting nothing), each exactly at its edge
and one short of it; tasks and sampling modes summed over the buckets, ties by name."""

from __future__ import annotations

from specwatch.analysis.causes.drafting import DraftingTally


def pooled(requests: int, long_tokens: int, drafted: int) -> DraftingTally:
    """requests - 1 short requests (15 tokens: too short to tell on their own) drafting
    `drafted` between them, and one of `long_tokens` drafting nothing."""
    tally = DraftingTally()
    for i in range(requests - 1):
        tally.drafting("m", "0-512", "chat", drafted if i == 0 else 0, 15)
    tally.drafting("m", "0-512", "code", 0, long_tokens)
    return tally


def test_the_pooled_rule_at_exactly_its_gates_with_the_detail() -> None:
    """30 requests, 29 x 15 + 565 = 1,000 tokens, 10 drafted (1%)."""
    found = pooled(30, 565, 10).not_drafting("m")
    assert found == {
        "ctx_buckets": ["0-512"],
        "requests": 30,
        "output_tokens": 1000,
        "drafted": 10,
        "share": 1.0,  # the one request long enough to tell drafted nothing
        "tasks": {"code": 1},
        "sampling": {"default": 1},
    }


def test_the_pooled_rule_one_short_of_each_gate_is_silent() -> None:
    assert pooled(29, 580, 10).not_drafting("m") is None  # 29 requests, 1,000 tokens
    assert pooled(30, 564, 9).not_drafting("m") is None  # 999 tokens
    assert pooled(30, 565, 11).not_drafting("m") is None  # 1.1% drafted


def test_most_requests_drafting_nothing_from_30_long_enough_to_tell() -> None:
    """30 requests of 16 tokens (the shortest that tells) drafting nothing, in two buckets:
    named in each, tasks and modes summed over them, the commonest first and ties by name;
    29 of them: silent (their 464 tokens are short of the pooled rule too)."""
    tally = DraftingTally()
    for bucket in ("0-512", "512-2k"):
        for i in range(30):
            task = ("zeta", "alpha", "beta")[i % 3] if bucket == "0-512" else "beta"
            tally.drafting("m", bucket, task, 0, 16, "greedy" if i < 20 else "default")
    found = tally.not_drafting("m")
    assert found is not None
    assert ["0-512", "512-2k"] == found["ctx_buckets"]
    assert [("beta", 40), ("alpha", 10), ("zeta", 10)] == list(found["tasks"].items())
    assert [("greedy", 40), ("default", 20)] == list(found["sampling"].items())
    assert (60, 960, 0, 1.0) == (
        found["requests"],
        found["output_tokens"],
        found["drafted"],
        found["share"],
    )
    short = DraftingTally()
    for _ in range(29):
        short.drafting("m", "0-512", "chat", 0, 16)
    assert short.not_drafting("m") is None


def test_the_pooled_rule_from_requests_all_too_short_to_tell_has_no_share() -> None:
    """67 requests of 15 tokens drafting nothing: 1,005 tokens pooled, none long enough to
    count in the per-request share: named, its share 0 (none measured)."""
    tally = DraftingTally()
    for _ in range(67):
        tally.drafting("m", "0-512", "chat", 0, 15)
    found = tally.not_drafting("m")
    assert found is not None
    assert (67, 1005, 0.0, {}) == (
        found["requests"],
        found["output_tokens"],
        found["share"],
        found["tasks"],
    )
