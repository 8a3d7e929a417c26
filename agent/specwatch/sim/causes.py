"""Each cause of poor or suspicious acceptance (analysis/causes/rules.py) as a switch: what the
simulator changes to show it, or the speculative config the sidecar is given (the verifier
and the schedule are the config's, not the engine's)."""

from __future__ import annotations

import dataclasses
from typing import Any

from specwatch import conventions as C
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig

Kind = C.CauseKind

# position past which the simulated drafter sees nothing (the demo's prompts reach 2k and more)
CONTEXT_LIMIT = 1024
# draft positions from 3 on accept nothing from 2k of context (position_cliff)
CLIFF_POSITION, CLIFF_CONTEXT = 3, 2048
IDLE_FROM = 4096  # prompts from this long on draft nothing (not_drafting)
SWITCH_OFF_AFTER = 20.0  # seconds of load after which nothing drafts
HALF_LIFE = 30.0  # seconds of load in which acceptance halves

SIMULATED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # (acceptance model fields, simulator fields)
    Kind.DRAFT_CONTEXT_LIMIT: ({"context_limit": CONTEXT_LIMIT}, {}),
    Kind.NO_ACCEPTANCE: ({"accept_nothing": True}, {}),  # from the start: draft_mismatch too
    Kind.REPETITION_SUSPECTED: ({"loop_share": 0.2}, {}),
    Kind.ENGINE_DISAGREEMENT: ({}, {"tau_overcount": 0.5}),
    Kind.POSITION_CLIFF: ({"cliff_position": CLIFF_POSITION, "cliff_context": CLIFF_CONTEXT}, {}),
    Kind.FIRST_POSITION_DEFICIT: ({"first_position_factor": 0.3}, {}),
    Kind.NOT_DRAFTING: ({"idle_from": IDLE_FROM}, {}),
    Kind.COLLAPSE_AFTER_PAUSE: ({"pause_at": 24, "after_pause_factor": 0.25}, {}),
    # a vLLM started without --per-request-spec-decode-metrics: answers without the block
    Kind.NO_PER_REQUEST_DATA: ({}, {"spec_metrics": "none"}),
    # the third set (docs/causes.md): the time-based ones show past their minimum evidence,
    # a window of the sidecar's and two (the demo's window is 60 s: speculation_switched_off
    # shows with --duration 100, decay_over_uptime with --duration 150)
    Kind.SPECULATION_SWITCHED_OFF: ({"switch_off_after": SWITCH_OFF_AFTER}, {}),
    Kind.LATER_POSITIONS_COLLAPSE: ({"later_alpha": 0.25}, {}),
    Kind.DRAFT_MISMATCH: ({"mismatch_alpha": 0.03}, {}),
    Kind.DECAY_OVER_UPTIME: ({"half_life": HALF_LIFE}, {}),
    # K = 0 steps listed (half the requests pause at the 8th token), K varying between
    # requests (ngram-like steps without a draft), and each K = 0 step charged as drafting K
    Kind.K0_STILL_COSTS: (
        {"pause_at": 8, "pause_share": 0.5, "no_draft_prob": 0.3},
        {"cost": CostModel(k0_costs=True)},
    ),
}

CONFIGURED: dict[str, dict[str, Any]] = {
    Kind.SYNTHETIC_VERIFIER: {
        "method": "ngram",
        "num_speculative_tokens": 4,
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_length": 2.5,
    },
    Kind.LOSSY_VERIFIER: {
        "method": "ngram",
        "num_speculative_tokens": 4,
        "spec_decoding_acceptance_method": "typical_acceptance_sampler",
    },
    # the simulator drafts K = 4 at every batch size: the schedule is configured, not applied
    Kind.SCHEDULE_NOT_APPLIED: {
        "method": "ngram",
        "num_speculative_tokens": 4,
        "num_speculative_tokens_per_batch_size": [[1, 2, 4], [3, 1024, 1]],
    },
}

KINDS = tuple(sorted([*SIMULATED, *CONFIGURED]))


def with_cause(config: SimConfig, kind: str | None) -> SimConfig:
    """`config` changed to show `kind` (unchanged for a configured one, or None)."""
    if kind not in SIMULATED:
        return config
    acceptance, sim = SIMULATED[kind]
    return dataclasses.replace(
        config, acceptance=dataclasses.replace(config.acceptance, **acceptance), **sim
    )
