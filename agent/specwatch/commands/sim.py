"""`specwatch sim`: the simulated vLLM speculative server, standing alone (or as serve's child)."""

from __future__ import annotations

import argparse
import asyncio
import json

from specwatch.core.listening import serve_app
from specwatch.core.loop import run_command, until_signal
from specwatch.settings import Settings
from specwatch.sim.acceptance import REQUEST_ICC, AcceptanceModel, CostModel, Drop
from specwatch.sim.causes import with_cause
from specwatch.sim.server import SimConfig, SimServer


def _print_line(line: str) -> None:
    print(line, flush=True)


def _draft_length(args: argparse.Namespace) -> int:
    """K: --num-spec-tokens, or the num_speculative_tokens of a --speculative-config."""
    if args.speculative_config is None:
        return int(args.num_spec_tokens)
    try:
        value = json.loads(args.speculative_config)["num_speculative_tokens"]
    except (ValueError, KeyError, TypeError):
        raise SystemExit(
            "specwatch sim: --speculative-config must be JSON with num_speculative_tokens"
        ) from None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SystemExit("specwatch sim: num_speculative_tokens must be a positive integer")
    return value


def run(args: argparse.Namespace, _settings: Settings) -> int:
    return run_command("sim", sim(args))


async def sim(args: argparse.Namespace) -> int:
    drops = (
        ()
        if args.drop_after is None
        else (Drop(args.drop_after, args.drop_factor, args.drop_task),)
    )
    request_icc = REQUEST_ICC if args.request_icc is None else args.request_icc
    config = SimConfig(
        model=args.model,
        num_spec_tokens=_draft_length(args),
        seed=args.seed,
        spec_metrics=args.spec_metrics,
        acceptance=AcceptanceModel(drops=drops, request_icc=request_icc),
        cost=CostModel(target_step_ms=args.step_ms, draft_cost_ratio=args.draft_cost),
        sleep=not args.no_sleep,
        engine=args.engine,
    )
    server = SimServer(with_cause(config, args.cause))
    # handler cancellation: a client that leaves stops its simulated generation, as in vLLM
    runner = await serve_app(server.app(), args.host, args.port, "--port", cancel=True)
    print(
        f"specwatch sim: {config.model} (K={config.num_spec_tokens}, as {config.engine}) "
        f"on {runner.addresses}"
    )
    stats = asyncio.create_task(server.log_stats(args.log_stats_interval, _print_line))
    try:
        await until_signal()
    finally:
        stats.cancel()
        await runner.cleanup()
    return 0
