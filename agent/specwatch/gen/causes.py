"""Each cause of poor or suspicious acceptance (analysis/causes.py) for the runbook: what it
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
)
