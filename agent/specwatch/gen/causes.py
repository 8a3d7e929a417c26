"""Each cause of poor or suspicious acceptance (analysis/causes/rules.py) for the runbook: what it
means and its fix. The zone alerts carry the slice's cause as the label and annotation
`cause`; its section here is `#cause-<kind>`."""

from __future__ import annotations

from dataclasses import dataclass

from specwatch import conventions as C

Kind = C.CauseKind


@dataclass(frozen=True, slots=True)
class CauseText:
    kind: str
    meaning: str
    fixes: tuple[str, ...]

    @property
    def anchor(self) -> str:
        return f"cause-{self.kind}"


CAUSES: tuple[CauseText, ...] = (
    CauseText(
        Kind.DRAFT_CONTEXT_LIMIT,
        "Past an absolute position (`position`: prompt plus output tokens) nothing is "
        "accepted, while before it acceptance is ordinary: the draft cannot see that far. vLLM "
        "zero-pads drafts past the drafter's context limit and still counts them "
        "(vllm-project/vllm#34734: EAGLE-3 checkpoints at 0% past ~2000 tokens). Every slice "
        "past that position looks red as if the draft were bad.",
        (
            "Raise the drafter's context: its `max_position_embeddings` / `max_model_len`, "
            "with RoPE scaling matching the target's (EAGLE heads trained at 2k need it).",
            "Or cap speculation to shorter contexts (route long prompts to a replica "
            "without it) until the draft is retrained with long sequences.",
        ),
    ),
    CauseText(
        Kind.NO_ACCEPTANCE,
        "Nothing is accepted (the upper bound of alpha-hat is at most 0.02) over enough "
        "requests: the draft and the target do not agree on anything. Usual reasons: a "
        "tokenizer mismatch between draft and target, a wrong or broken draft checkpoint, a "
        "draft for another target.",
        (
            "Check that the draft shares the target's tokenizer and vocabulary.",
            "Load the draft checkpoint on its own and compare its next-token choice with the "
            "target's on a few prompts; roll back to the last draft that worked.",
        ),
    ),
    CauseText(
        Kind.REPETITION_SUSPECTED,
        "A few requests accept nearly every draft token (`requests`, `share`): the mark of "
        "a repetition loop, where the output repeats itself and any draft guesses it. They "
        "raise the slice's acceptance (`alpha`) above what the other requests have "
        "(`alpha_without`): the zone flatters the draft, and the outputs are likely degenerate "
        "(vLLM#44487).",
        (
            "Look at the requests: `specwatch worst --kind high` lists them from the cycle "
            "log (with `cycle_log.capture_text` on, their text).",
            "Set a repetition / frequency penalty or a stop sequence for the clients "
            "concerned; judge the draft on `alpha_without`.",
        ),
    ),
    CauseText(
        Kind.SYNTHETIC_VERIFIER,
        "The config runs `rejection_sample_method: synthetic`: vLLM fakes acceptance at a "
        "configured rate (for load testing). Nothing about the draft is measured: the slices "
        "get zone `not_applicable` and fire no alert.",
        ("Use `standard` (or `block`) verification in production.",),
    ),
    CauseText(
        Kind.LOSSY_VERIFIER,
        "The config uses a relaxed (lossy) acceptance rule: outputs are not the target's "
        "distribution, and acceptance cannot be compared with a lossless verifier's. The "
        "slices get zone `not_applicable` and fire no alert.",
        ("Compare it only with configs using the same rule, and check output quality apart.",),
    ),
    CauseText(
        Kind.SCHEDULE_NOT_APPLIED,
        "A `num_speculative_tokens_per_batch_size` schedule is configured, but requests at "
        "batch sizes it gives a shorter K drafted more (`over_share` of `steps`): vLLM "
        "ignores the schedule (it drops it under data parallelism), so the K table advised "
        "is not what runs.",
        (
            "Check vLLM's startup log for the schedule being disabled; with data parallelism "
            "set one `num_speculative_tokens` for the load instead (`specwatch advise`).",
        ),
    ),
    CauseText(
        Kind.ENGINE_DISAGREEMENT,
        "vLLM's own per-request `mean_acceptance_length` differs from what its per-step "
        "arrays say (`reported_tau` against `recomputed_tau`, `vllm_version`): some versions "
        "over-count at end of sequence (vLLM#56101). specwatch's figures come from the "
        "arrays; dashboards or tools reading vLLM's figure see another number.",
        (
            "Trust the arrays (specwatch's tau); note the vLLM version, and upgrade past "
            "the fix when comparing with vLLM's own figure.",
        ),
    ),
    CauseText(
        Kind.POSITION_CLIFF,
        "From draft position `position` on nothing is accepted, while the position before it "
        "accepts as usual, from the ctx bucket `ctx_bucket` on (from `context` tokens on, "
        "where the steps' own positions show it): the drafter's later positions read no "
        "usable context there. Reported with DFlash drafters whose sliding-window "
        "layers run as full attention (vLLM#40898: 0.000 past position 4-5 beyond ~2k "
        "tokens). Every draft token past that position is wasted compute.",
        (
            "Lower K to `position` - 1 for the affected contexts (`num_speculative_tokens`, "
            "or a schedule), which costs nothing: those positions accept nothing anyway.",
            "Check the drafter's attention config against the engine's (sliding-window "
            "layers, `max_window_layers`), and upgrade past the fix.",
        ),
    ),
    CauseText(
        Kind.FIRST_POSITION_DEFICIT,
        "Position 1 accepts far less (`first`) than positions 2..K do given their "
        "predecessors (`later`): the draft predicts the token after next better than the "
        "next one. The mark of a hidden-state tap off by one (onnxruntime-genai#2538, "
        "sglang#38589): the drafter reads the target's hidden state of the wrong position, "
        "which lowers acceptance without zeroing it.",
        (
            "Check the drafter's hidden-state layer / offset against the target's (EAGLE "
            "`eagle_aux_hidden_state_layer_ids`, MTP layer index) and the engine version.",
            "Compare with the same drafter on another engine or version: a fix restores "
            "position 1 to the level of the others.",
        ),
    ),
    CauseText(
        Kind.NOT_DRAFTING,
        "Speculation is configured and the engine reports its block, but the drafter "
        "proposes almost nothing (`drafted` of `output_tokens` over `requests`) for prompts "
        "in `ctx_buckets`, or nothing at all for most requests (`share` of them; `tasks`: "
        "theirs): an ngram drafter that never finds a match (reported at 76k context), a "
        "draft model that failed to load, a checkpoint without draft tensors, or a gate that "
        "turns speculation off per request (on sampling parameters: greedy only; on a "
        "reasoning phase). The speculative slices look fine only because nothing is "
        "speculated; a model that never drafts has no slice, only its rollup.",
        (
            "For ngram: check `prompt_lookup_min` / `prompt_lookup_max` against the prompts; "
            "long contexts may need a draft model instead.",
            "For most requests, not all: look for the engine's per-request gate (sampling "
            "parameters, a reasoning phase) and the `tasks` the idle requests come from.",
            "Check the engine's startup log for the drafter, and `vllm:spec_decode_num_drafts`"
            " against the requests served.",
        ),
    ),
    CauseText(
        Kind.COLLAPSE_AFTER_PAUSE,
        "Requests accept far less after a stretch of steps that drafted nothing (K = 0 "
        "phases of a batch-size schedule) than before it (`alpha_before`, `alpha_after`, "
        "`requests`): the drafter's state is not carried over the pause (TensorRT-LLM#16888).",
        (
            "Avoid K = 0 rows in the schedule (keep K >= 1 at high batch), or disable "
            "speculation for the whole request instead of pausing it.",
            "Upgrade past the fix of the drafter's state after a pause.",
        ),
    ),
    CauseText(
        Kind.NO_PER_REQUEST_DATA,
        "vLLM counts speculative steps of the model, but its answers carry no per-request "
        "speculative block (`requests` without it, none with it): it runs without the flags "
        "that attach it, or is older than 0.32 (`vllm_version`). specwatch judges only the "
        "model's `all` slice, from vLLM's own counters; `flags` names what its version needs.",
        (
            "Start vLLM with the `flags` named (`--per-request-spec-decode-metrics detailed`, "
            "`--enable-per-request-metrics`; `specwatch serve` adds them itself).",
            "On a vLLM older than 0.32, upgrade first: older builds have no per-request data.",
        ),
    ),
    CauseText(
        Kind.SPECULATION_SWITCHED_OFF,
        "The engine stopped drafting for good (`stopped_at`; `requests` since, none drafting, "
        "while `drafting_share_before` of those before did): TensorRT-LLM turns speculation "
        "off permanently when its rolling acceptance falls below `acceptance_rate_threshold` "
        "(#12905), with nothing at alert level; the requests are served at baseline speed "
        "while the verify pools stay allocated. `gate` names the config's threshold.",
        (
            "Find what lowered acceptance before `stopped_at` (the slices' history in "
            "`specwatch replay`, a traffic change), then restart the pod: the switch holds "
            "for the process' life.",
            "Lower or remove the gate (`acceptance_rate_threshold`), or lengthen its window "
            "(`acceptance_rate_window_size`) so that one hard stretch does not end speculation.",
        ),
    ),
    CauseText(
        Kind.LATER_POSITIONS_COLLAPSE,
        "Position 1 accepts about as usual (`first`) while every later draft position "
        "accepts far less given the one before (`later`): healthy drafts accept more, not "
        "less, the deeper they reach. vLLM#51009: ~25% a position, accept length 1.46 at "
        "K = 5. The draft's later positions run on a broken state (a multi-token head's "
        "later layers, a cache the drafter does not update).",
        (
            "Set K to 1 or 2 (`specwatch advise`) until it is fixed: the later positions cost "
            "drafting and verify time and bring almost nothing.",
            "Check the draft's multi-token config (its layers per position, the hidden "
            "states it is fed) against the checkpoint's card; upgrade past vLLM#51009's fix.",
        ),
    ),
    CauseText(
        Kind.DRAFT_MISMATCH,
        "Near-zero acceptance from the model's first requests on (`alpha_first`, `alpha` "
        "since): the draft never matched this target. A converted or quantized checkpoint "
        "whose draft head no longer fits (vLLM#43455: 1.82% on NVFP4 against 80.56% "
        "native), or a checkpoint without draft tensors. `config`, `method`, `draft` and "
        "`vllm_version` say which config to compare with one that worked.",
        (
            "Serve the draft head from the same precision and conversion as the target "
            "(or the native checkpoint), or one converted with it.",
            "Turn speculation off for this config until then: every step pays for drafting "
            "and verifying tokens that are never kept.",
        ),
    ),
    CauseText(
        Kind.DECAY_OVER_UPTIME,
        "Acceptance slides down over the pod's life in every slice alike (`ratio`: the last "
        "third of its life over the first, slice by slice, so no traffic-mix change; "
        "`alpha_early`, `alpha_late`, `uptime_seconds`): a state that degrades with uptime, "
        "seen on decode nodes of prefill/decode-split serving and after rounds of long "
        "inputs (vllm-ascend#13523, #10495).",
        (
            "Restart the pod (a rolling restart): if acceptance comes back, the state is the "
            "cause; report it with `uptime_seconds` and the engine's version.",
            "On prefill/decode-split serving, check that the draft's KV cache (or hidden "
            "states) travels with the target's to the decode node.",
        ),
    ),
    CauseText(
        Kind.K0_STILL_COSTS,
        "Steps scheduled at K = 0 cost what drafting costs (`step_k0` against `step_plain` "
        "and `step_k`; `paid`: the share of drafting K's cost a K = 0 step still pays): the "
        "engine runs the drafter at K = 0 (vLLM#51510, the V2 model runner): users pay the "
        "full speculative cost with no benefit where the schedule meant to save it.",
        (
            "Upgrade past the fix (vLLM#51575, #57053), or run the V1 model runner.",
            "Until then, avoid K = 0 rows in `num_speculative_tokens_per_batch_size` (keep "
            "K >= 1, or turn speculation off for the whole pod at those loads).",
        ),
    ),
)
