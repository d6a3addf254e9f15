"""`evalfarm worker --broker URL`: run one worker node of a farm in the foreground."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from evalfarm.workers.options import cpu_list, settings_from


def register(subparsers: Any) -> None:
    """Add the `worker` subcommand."""
    parser = subparsers.add_parser(
        "worker",
        help="run one worker node (a prefork pool pinned to cores)",
        description="Consume jobs from a farm's queues with a prefork pool; each child is pinned to "
        "one core and owns one sandbox slot. SIGTERM finishes running work and requeues the rest.",
    )
    parser.add_argument("--broker", metavar="URL", help="redis://host:port/db (or EVALFARM_BROKER_URL)")
    parser.add_argument("--queues", metavar="Q1,Q2", help="queues to consume (default: all workloads)")
    parser.add_argument("--concurrency", type=int, metavar="N", help="pool processes (default: one per CPU)")
    parser.add_argument("--cpus", type=cpu_list, metavar="LIST", help="cores to pin to, e.g. 0-3,6")
    parser.add_argument(
        "--slot-base", type=int, metavar="N", help="first sandbox slot (nodes sharing a host)"
    )
    parser.add_argument("--name", metavar="NAME", help="node name (default evalfarm-PID@HOST)")
    parser.add_argument("--quiet", action="store_true", help="no Celery banner, and log warnings only")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the node until a shutdown signal."""
    from evalfarm.workers.node import plan_node, run_node

    settings = settings_from(
        broker_url=args.broker, concurrency=args.concurrency, cpus=args.cpus, slot_base=args.slot_base
    )
    queues = args.queues.split(",") if args.queues else None
    plan = plan_node(settings, queues, args.name)
    if args.quiet and not args.verbose:
        logging.getLogger().setLevel(logging.WARNING)
        return run_node(settings, plan, "WARNING", quiet=True)
    return run_node(settings, plan, "DEBUG" if args.verbose else "INFO")
