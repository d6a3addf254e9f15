"""`evalfarm gateway --broker URL`: the farm's HTTP front door (native, ELM, SandboxFusion, OpenRLHF)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evalfarm.workers.options import settings_from


def register(subparsers: Any) -> None:
    """Add the `gateway` subcommand."""
    parser = subparsers.add_parser(
        "gateway",
        help="serve the farm over HTTP: /v1/score, ELM's, SandboxFusion's and OpenRLHF's routes",
        description="An HTTP gateway to a running farm. Binds loopback unless told otherwise; any other "
        "address needs EVALFARM_GATEWAY_TOKEN, which clients send as a bearer token (or ?token=, or a "
        "/t/<token>/ path prefix).",
    )
    parser.add_argument("--broker", metavar="URL", help="redis://host:port/db (or EVALFARM_BROKER_URL)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    add_deadline_options(parser)
    parser.set_defaults(func=run)


def add_deadline_options(parser: argparse.ArgumentParser) -> None:
    """The gateway's deadlines (settings, default from EVALFARM_GATEWAY_*_DEADLINE_S)."""
    parser.add_argument(
        "--deadline-s", type=float, metavar="S",
        help="longest a /v1/score request is scored, and its default deadline "
        "(EVALFARM_GATEWAY_DEADLINE_S; default 600)",
    )  # fmt: skip
    parser.add_argument(
        "--openrlhf-deadline-s", type=float, metavar="S",
        help="/get_reward's deadline, under OpenRLHF's own 180 s client timeout "
        "(EVALFARM_GATEWAY_OPENRLHF_DEADLINE_S; default 150)",
    )  # fmt: skip


def gateway_settings(args: argparse.Namespace) -> Any:
    """The gateway's settings: the environment's, with the command line's on top."""
    return settings_from(
        broker_url=args.broker,
        gateway_deadline_s=args.deadline_s,
        gateway_openrlhf_deadline_s=args.openrlhf_deadline_s,
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; a configuration that cannot be served is a message and exit code 2."""
    from evalfarm.broker.errors import ConfigError
    from evalfarm.gateway import serve

    settings = gateway_settings(args)
    where = f"http://{args.host}:{args.port}"
    print(f"gateway: {where} (broker {settings.broker_url})", file=sys.stderr, flush=True)
    try:
        serve(settings, args.host, args.port)
    except ConfigError as error:
        print(f"evalfarm gateway: {error}", file=sys.stderr)
        return 2
    return 0
