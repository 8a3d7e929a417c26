"""The grammar of the simulated commands: `sim` (the simulated server, answering like vLLM or
another engine) and `demo` (simulator, proxy and load in one process)."""

from __future__ import annotations

import argparse
import os

from specwatch.cli import values
from specwatch.cli.flags import add_command
from specwatch.conventions import CauseKind
from specwatch.engines.detect import ENGINES  # not sim/: the grammar is built at every start

# the causes the simulator makes (sim/causes.py SIMULATED); the demo also configures the others
SIM_CAUSES = (
    CauseKind.COLLAPSE_AFTER_PAUSE,
    CauseKind.DRAFT_CONTEXT_LIMIT,
    CauseKind.ENGINE_DISAGREEMENT,
    CauseKind.FIRST_POSITION_DEFICIT,
    CauseKind.NO_ACCEPTANCE,
    CauseKind.NO_PER_REQUEST_DATA,
    CauseKind.NOT_DRAFTING,
    CauseKind.POSITION_CLIFF,
    CauseKind.REPETITION_SUSPECTED,
    CauseKind.SPECULATION_SWITCHED_OFF,
    CauseKind.LATER_POSITIONS_COLLAPSE,
    CauseKind.DRAFT_MISMATCH,
    CauseKind.DECAY_OVER_UPTIME,
    CauseKind.K0_STILL_COSTS,
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _sim_command(commands)
    _demo_command(commands)


def _sim_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sim = add_command(
        commands,
        "sim",
        "run the simulated vLLM speculative server",
        "An OpenAI-compatible server that answers like vLLM with speculative decoding: per-\n"
        "request draft/accept data, /metrics, /version and vLLM's log lines, with acceptance\n"
        "by task and context length. For the demo, tests and benchmarks, not a model.",
    )
    sim.add_argument("--host", default="127.0.0.1", help="bind address")
    sim.add_argument("--port", type=values.port, default=8001, help="port")
    sim.add_argument(
        "--model", "--served-model-name", dest="model", default="sim-llama", help="model name"
    )
    sim.add_argument("--num-spec-tokens", type=values.whole, default=4, help="draft length K")
    sim.add_argument(
        "--speculative-config",
        "--speculative_config",
        metavar="JSON",
        help="vLLM's own flag, so `serve -- specwatch sim` reads like a vLLM command line: its "
        "num_speculative_tokens is K",
    )
    sim.add_argument("--seed", type=int, default=0, help="random seed")
    sim.add_argument(
        "--per-request-spec-decode-metrics",
        "--spec-metrics",
        dest="spec_metrics",
        choices=("detailed", "summary", "none"),
        default="detailed",
        help="per-request acceptance in responses, like vLLM's flag (but on by default)",
    )
    sim.add_argument(
        "--engine",
        choices=ENGINES,
        default="vllm",
        help="answer like this engine: its per-request data's shape, its /metrics names "
        "(docs/engines.md; sglang and trtllm from their documented shapes)",
    )
    sim.add_argument("--enable-per-request-metrics", action="store_true", help="accepted, as vLLM")
    sim.add_argument("--enable-request-id-headers", action="store_true", help="accepted, as vLLM")
    sim.add_argument(
        "--log-stats-interval",
        type=float,
        default=float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10")),
        help="seconds between vLLM-style stats lines on stdout (VLLM_LOG_STATS_INTERVAL)",
    )
    sim.add_argument("--step-ms", type=float, default=4.0, help="target step time, ms")
    sim.add_argument("--draft-cost", type=float, default=0.05, help="draft/target step cost c")
    sim.add_argument("--no-sleep", action="store_true", help="answer without simulated latency")
    sim.add_argument(
        "--drop-after", type=float, help="seconds after start of an acceptance drop (none)"
    )
    sim.add_argument(
        "--drop-factor", type=float, default=0.7, help="acceptance multiplied by this at the drop"
    )
    sim.add_argument("--drop-task", help="the task the drop hits (all)")
    sim.add_argument(
        "--cause",
        choices=SIM_CAUSES,
        help="show one cause of poor or suspicious acceptance (docs/causes.md)",
    )
    sim.add_argument(
        "--request-icc",
        type=float,
        default=None,
        help="between-request variance of acceptance / m (1 - m) (default: calibrated, 0.17)",
    )

    from specwatch.cli.bench import add_parser as add_bench

    add_bench(commands)


def _demo_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = add_command(
        commands,
        "demo",
        "simulator, proxy and a mixed workload in one process, with a live table",
        "Runs the simulated server, the sidecar in front of it and a workload of several\n"
        "tasks and context lengths, on a shortened time scale (a one-minute window): zones\n"
        "settle within the run, and halfway one task's draft gets worse.",
    )
    demo.add_argument("--duration", type=values.positive, default=45.0, help="seconds of load")
    demo.add_argument("--seed", type=int, default=7, help="random seed")
    demo.add_argument("--concurrency", type=values.count, default=16, help="requests in flight")
    demo.add_argument(
        "--engine",
        choices=ENGINES,
        default="vllm",
        help="the simulated engine (docs/engines.md): what its data lets specwatch judge",
    )
    demo.add_argument(
        "--cause",
        choices=sorted(CauseKind),
        help="simulate (or configure) one cause of poor acceptance and watch it named",
    )
    demo.add_argument("--port", type=values.port, default=0, help="proxy port (default: any free)")
    demo.add_argument(
        "--admin-port", type=values.port, default=0, help="admin port (default: any free)"
    )
    demo.add_argument(
        "--keep-running", action="store_true", help="keep serving after the summary (Ctrl-C)"
    )
