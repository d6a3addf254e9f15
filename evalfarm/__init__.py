"""evalfarm: untrusted programs and weight-edit answers scored by sandboxed workers over Celery and Redis.

`from evalfarm import Farm, AsyncFarm` is all a producer needs; the trainers' reward functions are in
`evalfarm.trainers`. Importing this package costs nothing: each name is imported on first use, and
`Farm` imports Celery only when one is built.

The farm's rooms are its subpackages (the README's "Architecture" maps them):

- `evalfarm.sandbox`  runs one untrusted program under hard limits and reports what it observed;
- `evalfarm.envs`     turns a job into sandbox runs and a result (`envs.catalog`: what each env is);
- `evalfarm.tasks`    the Celery tasks a worker runs, over the envs;
- `evalfarm.workers`  worker nodes, the embedded farm and the `evalfarm` command line;
- `evalfarm.broker`   the producer's client, and the farm's Celery app and protocol on Redis;
- `evalfarm.gateway`  the HTTP front door (native, ELM, SandboxFusion and OpenRLHF routes);
- `evalfarm.trainers` reward functions for TRL and verl.

In a source checkout the rooms are the repository's top-level folders, beside this one, and this
package reaches them through its `__path__`; an installed wheel holds them inside it (the
`package-dir` table of pyproject.toml).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_CHECKOUT = os.path.dirname(_HERE)
if not os.path.isdir(os.path.join(_HERE, "broker")) and os.path.isfile(
    os.path.join(_CHECKOUT, "broker", "__init__.py")
):
    __path__.append(_CHECKOUT)

__version__ = "0.2.0"

_EXPORTS = {
    "AsyncFarm": "evalfarm.broker.aio",
    "BatchStats": "evalfarm.broker.batch",
    "ConfigError": "evalfarm.broker.errors",
    "Farm": "evalfarm.broker.client",
    "FarmError": "evalfarm.broker.errors",
    "Result": "evalfarm.broker.result",
    "Settings": "evalfarm.broker.settings",
    "ClientSettings": "evalfarm.broker.settings",
    "WorkerSettings": "evalfarm.broker.settings",
    "GatewaySettings": "evalfarm.broker.settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'evalfarm' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
