"""`evalfarm up`: a farm on this machine in the foreground (Redis, workers pinned to cores, metrics)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any

from evalfarm.workers.commands.gateway import add_deadline_options
from evalfarm.workers.options import cpu_list


def register(subparsers: Any) -> None:
    """Add the `up` subcommand."""
    parser = subparsers.add_parser(
        "up",
        help="start Redis and workers here; print the broker and metrics URLs; Ctrl-C stops all",
        description="Start a private Redis (AOF on, loopback, a free port) and a worker node consuming "
        "every queue with its processes pinned to cores. Runs until Ctrl-C or SIGTERM, then stops "
        "everything it started.",
    )
    parser.add_argument("--workers", type=int, metavar="N", help="pool processes (default: one per CPU)")
    parser.add_argument("--cpus", type=cpu_list, metavar="LIST", help="cores to pin workers to, e.g. 0-3")
    parser.add_argument("--port", type=int, metavar="PORT", help="Redis port (default: a free one)")
    parser.add_argument("--http", type=int, metavar="PORT", help="also serve the HTTP gateway on this port")
    parser.add_argument(
        "--flower",
        type=int,
        metavar="PORT",
        help="also serve Flower, Celery's dashboard (EVALFARM_FLOWER_AUTH=user:pw)",
    )
    add_deadline_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the farm, print where it is, supervise it until told to stop."""
    from evalfarm.workers.embedded import EmbeddedFarm

    extra = ["--cpus", ",".join(map(str, args.cpus))] if args.cpus else []
    deadlines = {"EVALFARM_GATEWAY_DEADLINE_S": args.deadline_s,
                 "EVALFARM_GATEWAY_OPENRLHF_DEADLINE_S": args.openrlhf_deadline_s}  # fmt: skip
    farm = EmbeddedFarm(
        workers=args.workers,
        worker_args=extra,
        worker_env={**os.environ, **{k: str(v) for k, v in deadlines.items() if v is not None}},
        redis_port=args.port,
        http_port=args.http,
        flower_port=args.flower,
        quiet=False,  # an operator's farm: the node says what it does
    )
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        farm.start()
        print(f"broker:  {farm.broker_url}", flush=True)
        print(f"metrics: {farm.metrics_url or 'not served'}", flush=True)
        if farm.gateway is not None:
            print(f"http:    {farm.gateway.url}", flush=True)
        if farm.flower is not None:
            print(f"flower:  {farm.flower.url}", flush=True)
        print("Ctrl-C stops the farm", file=sys.stderr, flush=True)
        return _supervise(farm)
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the shutdown short
        farm.close()
        print("farm stopped", file=sys.stderr, flush=True)


def _supervise(farm: Any) -> int:
    """Restart a worker node that dies; give up (exit 1) if Redis dies."""
    while True:
        time.sleep(1.0)
        if not farm.redis.alive:
            print("redis exited; stopping the farm", file=sys.stderr, flush=True)
            return 1
        for name, child in (("worker node", farm.worker), ("gateway", farm.gateway), ("flower", farm.flower)):
            if child is not None and not child.alive:
                print(f"{name} died; restarting it", file=sys.stderr, flush=True)
                child.stop()
                child.start()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
