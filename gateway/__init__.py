"""The farm's HTTP front door: its own routes and those of ELM, SandboxFusion and OpenRLHF.

`serve(settings, host, port)` runs it with uvicorn; `create_app(settings)` is the ASGI app. Nothing
is imported until used: importing `broker` stays cheap.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from evalfarm.broker.errors import ConfigError
from evalfarm.broker.settings import GatewaySettings

__all__ = ["create_app", "serve"]

LOOPBACK_NAMES = {"localhost", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(settings: GatewaySettings, farm: Any = None) -> Any:
    """The gateway's ASGI application."""
    from evalfarm.gateway.app import create_app as build

    return build(settings, farm)


def serve(settings: GatewaySettings, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the gateway in the foreground until interrupted.

    Binding anything but loopback needs `EVALFARM_GATEWAY_TOKEN` (clients then send it as a bearer
    token, `?token=`, or a `/t/<token>/` path prefix).
    """
    if not is_loopback(host) and not settings.gateway_token:
        raise ConfigError(
            f"binding {host} exposes the farm: set EVALFARM_GATEWAY_TOKEN (clients must send it)"
        )
    if not settings.broker_url:
        raise ConfigError("no broker URL: set EVALFARM_BROKER_URL or pass --broker")
    import uvicorn

    uvicorn.run(
        create_app(settings), host=host, port=port, log_level="warning", access_log=False,
        timeout_keep_alive=30, timeout_graceful_shutdown=30,
    )  # fmt: skip
