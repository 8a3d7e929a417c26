"""`specwatch sim`: the simulated vLLM speculative server, standing alone (or as serve's child)."""

from __future__ import annotations

import argparse
import asyncio

from specwatch.commands.loop import until_signal
from specwatch.listening import serve_app
from specwatch.sim.acceptance import REQUEST_ICC, AcceptanceModel, CostModel, Drop
from specwatch.sim.causes import with_cause
from specwatch.sim.server import SimConfig, SimServer


def _print_line(line: str) -> None:
    print(line, flush=True)


async def run_sim(args: argparse.Namespace) -> int:
    drops = (
        ()
        if args.drop_after is None
        else (Drop(args.drop_after, args.drop_factor, args.drop_task),)
    )
    request_icc = REQUEST_ICC if args.request_icc is None else args.request_icc
    config = SimConfig(
        model=args.model,
        num_spec_tokens=args.num_spec_tokens,
        seed=args.seed,
        spec_metrics=args.spec_metrics,
        acceptance=AcceptanceModel(drops=drops, request_icc=request_icc),
        cost=CostModel(target_step_ms=args.step_ms, draft_cost_ratio=args.draft_cost),
        sleep=not args.no_sleep,
    )
    server = SimServer(with_cause(config, args.cause))
    # handler cancellation: a client that leaves stops its simulated generation, as in vLLM
    runner = await serve_app(server.app(), args.host, args.port, "--port", cancel=True)
    print(f"specwatch sim: {config.model} (K={config.num_spec_tokens}) on {runner.addresses}")
    stats = asyncio.create_task(server.log_stats(args.log_stats_interval, _print_line))
    try:
        await until_signal()
    finally:
        stats.cancel()
        await runner.cleanup()
    return 0
