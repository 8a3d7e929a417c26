"""A config change across a restart (analysis/compare/changes.py): each slice compared before
and after, the overall change at the after period's mix, a caveat when the mix moved."""

from __future__ import annotations

import math
import re

import jsonschema
import orjson
import pytest
from specwatch.analysis.compare.changes import ConfigHistory, sums_of
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.core.records import SliceKey
from specwatch.settings import load_settings
from specwatch.upstream.specconfig import spec_config
from structlog.testing import capture_logs

from tests.support import ROOT

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}


def test_a_change_compares_each_slice_and_weighs_the_overall_change_by_the_mix_after() -> None:
    """Before: chat 0.6 on 1000 trials, code 0.9 on 4000; after: chat 0.5 on 3000, code 0.9 on
    4000. Per slice chat is worse and code the same (its interval within +-0.02); overall, at
    the after mix (3/7, 4/7), the config's part is 3/7 x (0.5 - 0.6) and the mix's part
    (3/7 - 1/5) 0.6 + (4/7 - 4/5) 0.9; the mix moved (PSI 0.25)."""

    def alike(requests: int, accepted: int, trials: int) -> Sums:
        a, t = accepted // requests, trials // requests
        return Sums(requests, accepted, trials, requests * a * a, requests * a * t,
                    requests * t * t)  # fmt: skip

    chat, code = SliceKey("m", "0-512", "chat"), SliceKey("m", "0-512", "code")
    rollup = SliceKey("m", "all", "all")
    old = spec_config(NGRAM, "0.32.0", "stable")
    history = ConfigHistory(spec_config({**NGRAM, "num_speculative_tokens": 5}, "0.32.0", "stable"),
                            load_settings())  # fmt: skip
    before = {
        chat: alike(50, 600, 1000),
        code: alike(200, 3600, 4000),
        rollup: alike(250, 4200, 5000),
    }
    history.restore({"config": old.as_dict(), "slices": [[*k, *v] for k, v in before.items()]}, 9.0)
    assert 1 == history.changes
    after = {
        chat: alike(150, 1500, 3000),
        code: alike(200, 3600, 4000),
        rollup: alike(350, 5100, 7000),
    }
    view = history.view(after)
    assert view is not None
    verdicts = {row.key[2]: row.verdict for row in view.slices}
    assert {"chat": "worse", "code": "same"} == verdicts
    (model,) = view.models
    assert ("m",) == model.rollup.key[:1]
    assert model.overall is not None
    assert pytest.approx(3 / 7 * (0.5 - 0.6)) == model.overall.rate
    assert pytest.approx((3 / 7 - 0.2) * 0.6 + (4 / 7 - 0.8) * 0.9) == model.overall.mix
    assert pytest.approx(0.2508, abs=1e-3) == model.mix_psi
    assert model.caveat is not None


def test_the_same_config_carries_its_sums_and_a_saved_change_survives_another_restart() -> None:
    key = SliceKey("m", "0-512", "chat")
    config = spec_config(NGRAM, "0.32.0", "stable")
    first = ConfigHistory(config, load_settings())
    saved = first.state({key: Sums(10, 70, 100, 500, 700, 1000)})
    second = ConfigHistory(config, load_settings())
    second.restore(saved, 5.0)
    assert (0, None) == (second.changes, second.changed)  # the same config: no change
    after = second.after({key: Sums(10, 70, 100, 500, 700, 1000)})
    assert {key: Sums(20, 140, 200, 1000, 1400, 2000)} == after
    other = ConfigHistory(spec_config({**NGRAM, "num_speculative_tokens": 4}, "0.32.0", "stable"),
                          load_settings())  # fmt: skip
    other.restore(second.state({}), 7.0)
    assert 1 == other.changes
    again = ConfigHistory(other.config, load_settings())
    again.restore(other.state({}), 9.0)  # restarted once more with the new config
    assert 0 == again.changes
    assert again.changed is not None
    assert 7.0 == again.changed[2]  # the change is still the one recorded at 7


@pytest.mark.parametrize(
    "broken",
    [[], {"config": "x"}, {"config": {"id": "a"}, "slices": [["m", "c"]]},
     {"config": {"id": "a"}, "slices": [["m", "c", "t", 1, 2, 3, 4, 5, -6]]}],
)  # fmt: skip
def test_a_saved_state_that_is_not_one_is_refused(broken: object) -> None:
    with pytest.raises(ValueError, match=r"."):
        ConfigHistory(spec_config(NGRAM, None, "stable"), load_settings()).restore(broken, 1.0)


def _alike(requests: int, accepted: int, trials: int) -> Sums:
    a, t = accepted // requests, trials // requests
    return Sums(requests, accepted, trials, requests * a * a, requests * a * t, requests * t * t)


def test_a_models_rollup_and_slices_share_one_family_and_other_models_do_not_join_it() -> None:
    """Each interval of a model is at 1 - 0.05 / m, m its slices compared plus its rollup:
    two slices and a rollup give each 1 - 0.05 / 3, whether or not other models are compared
    in the same call."""
    from specwatch.analysis.compare.alpha import compare_models, difference, family_confidence

    cfg = load_settings()
    side = _alike(100, 3000, 5000)

    def pairs(models: list[str]) -> tuple[list, list]:  # type: ignore[type-arg]
        finer = [((m, "0-512", t), side, side) for m in models for t in ("chat", "code")]
        return [((m, "all", "all"), side, side) for m in models], finer

    expected = difference(side, side, family_confidence(0.95, 3))
    for models in (["a"], ["a", "b", "c", "d"]):
        rollups, finer = pairs(models)
        slices, compared = compare_models(
            rollups, finer, 0.95, cfg.canary.margin, cfg.zones.min_trials, 30
        )
        for row in (*slices, *(model.rollup for model in compared)):
            assert expected == row.difference, (models, row.key)


def test_a_side_below_the_gates_is_insufficient_whichever_side_it_is() -> None:
    """Before: 5 requests at 0.9; after: 100 at 0.6. The difference is large, but the before
    side is below the gates (30 requests): insufficient, never worse. And the other way."""
    from specwatch.analysis.compare.alpha import INSUFFICIENT, compare_slices

    few, many = _alike(5, 1800, 2000), _alike(100, 24_000, 40_000)
    for before, after in ((few, many), (many, few)):
        (row,) = compare_slices([(("m", "0-512", "chat"), before, after)], 0.95, 0.02, 1000, 30)
        assert INSUFFICIENT == row.verdict
        assert row.difference is None


def _timed(tpot: float, requests: int, tokens: float = 50.0, load: float = 3.0) -> DecodeSums:
    """`requests` alike requests of `tokens` decode tokens whose TPOT spreads +-10%, at `load`
    in flight."""
    out = DecodeSums()
    for i in range(requests):
        out.add_request(tpot * tokens * (0.9 + 0.2 * (i % 5) / 4), tokens, load, tokens / 2)
    return out


def test_a_change_compares_goodput_within_load_buckets_and_carries_it_across_restarts() -> None:
    """K 3 -> 5 made every load bucket 20% slower per output token: the model and its slice
    are `slower`; the goodput sums survive a restart with the new config, and a load that moved
    between the periods is said."""
    chat = ("m", "0-512", "chat")
    old = spec_config(NGRAM, "0.32.0", "stable")
    before_timed = {(*chat, "1"): _timed(0.010, 60), (*chat, "2-4"): _timed(0.020, 60)}
    first = ConfigHistory(old, load_settings())
    saved = first.state({}, before_timed)
    history = ConfigHistory(spec_config({**NGRAM, "num_speculative_tokens": 5}, "0.32.0",
                                        "stable"), load_settings())  # fmt: skip
    history.restore(saved, 9.0)
    after_timed = {(*chat, "1"): _timed(0.012, 100), (*chat, "2-4"): _timed(0.024, 20)}
    view = history.view({}, after_timed)
    assert view is not None
    assert view.tpot is not None
    model = view.tpot["models"]["m"]
    assert model["verdict"] == "slower"
    assert model["ratio"]["estimate"] == pytest.approx(1.2, rel=1e-9)
    assert [row["verdict"] for row in view.tpot["slices"]] == ["slower"]
    assert model["load_psi"] > 0.1
    assert "the load moved" in model["caveat"]
    again = ConfigHistory(history.config, load_settings())
    again.restore(history.state({}, after_timed), 11.0)  # restarted with the new config
    repeated = again.view({}, {})  # nothing new since the restart
    assert repeated is not None
    assert repeated.tpot == view.tpot


def test_a_state_without_goodput_still_restores() -> None:
    """A state saved before goodput was kept: no goodput, no error."""
    config = spec_config(NGRAM, "0.32.0", "stable")
    saved = ConfigHistory(config, load_settings()).state({})
    del saved["goodput"]
    history = ConfigHistory(config, load_settings())
    history.restore(saved, 1.0)
    assert history.carried_timed == {}
    with pytest.raises(ValueError, match="not a request count"):
        history.restore({**saved, "goodput": [["m", "c", "t", "1", -1, 0, 0, 0, 0, 0]]}, 1.0)


GOOD_ROW = ["m", "0-512", "chat", 0, 0, 0, 0, 0, 0]  # zero counts are counts
TIMED = ["m", "0-512", "chat", "1-4", 0, *[0.0] * 14]  # zero requests too (19 fields)


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ({"config": {"id": "a"}, "slices": {}}, "slices must be a list"),
        ({"config": {"id": "a"}, "slices": [{"m": 1}]}, "not a slice row: {'m': 1}"),
        ({"config": {"id": "a"}, "slices": [[1, "c", "t", *[0] * 6]]},
         "not a slice key: [1, 'c', 't']"),
        ({"config": {"id": "a"}, "slices": [], "goodput": {}}, "goodput must be a list"),
        ({"config": {"id": "a"}, "slices": [], "goodput": [TIMED[:14]]},
         f"not a goodput row: {TIMED[:14]!r}"),
        ({"config": {"id": "a"}, "slices": [], "goodput": [["m", "c", "t", 4, *TIMED[4:]]]},
         "not a goodput key: ['m', 'c', 't', 4]"),
        ({"config": {"id": "a"}, "slices": [], "goodput": [[*TIMED[:4], -1, *TIMED[5:]]]},
         "not a request count: -1"),
        ({"config": {"id": "a"}, "slices": [], "goodput": [[*TIMED[:4], True, *TIMED[5:]]]},
         "not a request count: True"),
        ({"config": {"id": "a"}, "slices": [], "goodput": [[*TIMED[:5], "x", *TIMED[6:]]]},
         f"not sums: {['x', *TIMED[6:]]!r}"),
    ],
)  # fmt: skip
def test_each_refusal_of_a_saved_state_says_what_it_found(broken: object, said: str) -> None:
    history = ConfigHistory(spec_config(NGRAM, None, "stable"), load_settings())
    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        history.restore(broken, 1.0)


def test_rows_of_zero_counts_and_each_saved_goodput_form_restore() -> None:
    """Zero requests and counts are counts; a goodput row of 10 (before the load moments),
    15 (before the steps) or 19 fields restores; the same config carries them."""
    config = spec_config(NGRAM, None, "stable")
    for fields in (10, 15, 19):
        history = ConfigHistory(config, load_settings())
        saved = {"config": config.as_dict(), "slices": [GOOD_ROW], "goodput": [TIMED[:fields]]}
        history.restore(saved, 1.0)
        assert {SliceKey("m", "0-512", "chat"): Sums()} == history.carried
        assert [("m", "0-512", "chat", "1-4")] == list(history.carried_timed)


def test_a_change_record_that_is_not_one_is_refused_and_a_new_config_is_logged() -> None:
    config = spec_config(NGRAM, "0.32.0", "stable")
    saved = ConfigHistory(config, load_settings()).state({SliceKey("m", "0-512", "chat"): Sums()})
    broken: list[object] = [[], {"at": "noon"}]
    for change in broken:
        with pytest.raises(ValueError, match=r"^not a change record$"):
            ConfigHistory(config, load_settings()).restore({**saved, "change": change}, 1.0)
    other = ConfigHistory(spec_config({**NGRAM, "num_speculative_tokens": 4}, "0.32.0", "stable"),
                          load_settings())  # fmt: skip
    with capture_logs() as logs:
        other.restore(saved, 3.0)
    assert [
        {
            "event": "config_changed",
            "log_level": "warning",
            "previous": config.id,
            "config": other.config.id,
            "previous_config": config.as_dict(),
            "now_config": other.config.as_dict(),
            "slices_before": 1,
        }
    ] == logs


def test_the_tpot_change_by_hand_its_rows_in_the_schema_and_the_load_moved_word_for_word() -> None:
    """Before: 60 and 60 requests at loads 1 and 2-4 (shares 1/2, 1/2), two slices at load 1;
    after: 100 and 20 (5/6, 1/6), one slice only: PSI (5/6 - 1/2) ln(5/3) + (1/6 - 1/2) ln(1/3)."""
    chat, code = ("m", "0-512", "chat"), ("m", "0-512", "code")
    before = {
        (*chat, "1"): _timed(0.010, 30),
        (*code, "1"): _timed(0.010, 30),
        (*chat, "2-4"): _timed(0.020, 60),
    }
    first = ConfigHistory(spec_config(NGRAM, "0.32.0", "stable"), load_settings())
    saved = first.state({}, before)
    assert {"config", "slices", "goodput", "change"} == set(saved)
    history = ConfigHistory(spec_config({**NGRAM, "num_speculative_tokens": 5}, "0.32.0",
                                        "stable"), load_settings())  # fmt: skip
    history.restore(saved, 9.0)
    after = {(*chat, "1"): _timed(0.012, 100), (*chat, "2-4"): _timed(0.024, 20)}
    view = history.view({}, after)
    assert view is not None
    assert view.tpot is not None
    assert load_settings().canary.tpot_margin == view.tpot["margin"]
    model = view.tpot["models"]["m"]
    psi = (5 / 6 - 1 / 2) * math.log(5 / 3) + (1 / 6 - 1 / 2) * math.log(1 / 3)
    assert model["load_psi"] == pytest.approx(psi)
    moved = (
        f"the load moved between the periods (PSI {psi:.2f}): compared within load buckets, "
        "at the after period's mix"
    )
    assert moved == model["caveat"]  # the only caveat: no load one side alone saw
    schema = orjson.loads((ROOT / "docs" / "status.schema.json").read_bytes())
    for row, kind in (
        (model, "change_tpot_model"),
        *((r, "change_tpot_row") for r in view.tpot["slices"]),
    ):
        jsonschema.validate(row, {"$ref": f"#/$defs/{kind}", "$defs": schema["$defs"]})
    assert [("m", "0-512", "chat"), ("m", "0-512", "code")] == [
        (r["model"], r["ctx_bucket"], r["task"]) for r in view.tpot["slices"]
    ]


def test_a_slice_seen_before_the_change_only_is_compared_as_insufficient() -> None:
    """The live sums are alpha-hat's of each slice's counts; a slice only the before period
    saw is in the comparison (no trials after it), not left out."""
    key, gone = SliceKey("m", "0-512", "chat"), SliceKey("m", "0-512", "code")
    counts = Counts.of_request((3, 3), (2, 1), 4)
    assert Sums(1, 3, 5, 9, 15, 25) == sums_of(counts)  # accepted 2 + 1, trials 3 + 2
    first = ConfigHistory(spec_config(NGRAM, "0.32.0", "stable"), load_settings())
    saved = first.state(
        {key: Sums(10, 70, 100, 500, 700, 1000), gone: Sums(5, 30, 50, 200, 300, 500)}
    )
    history = ConfigHistory(spec_config({**NGRAM, "num_speculative_tokens": 5}, "0.32.0",
                                        "stable"), load_settings())  # fmt: skip
    history.restore(saved, 9.0)
    view = history.view({key: Sums(10, 70, 100, 500, 700, 1000)})
    assert view is not None
    assert ("m", "0-512", "code") in [row.key for row in view.slices]
