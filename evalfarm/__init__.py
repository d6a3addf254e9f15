"""evalfarm: untrusted programs and weight-edit answers scored by sandboxed workers over Celery and Redis.

`from evalfarm import Farm, AsyncFarm` is all a producer needs; the trainers' reward functions are in
`evalfarm.trainers`. Importing this package costs nothing: each name is imported on first use, and
`Farm` imports Celery only when one is built.

The farm's rooms are its subpackages (docs/architecture.md maps them):

- `evalfarm.sandbox`  runs one untrusted program under hard limits and reports what it observed;
- `evalfarm.envs`     turns a job into sandbox runs and a result (`envs.catalog`: what each env is);
- `evalfarm.tasks`    the Celery tasks a worker runs, over the envs;
- `evalfarm.workers`  worker nodes, the embedded farm and the `evalfarm` command line;
- `evalfarm.broker`   the producer's client, and the farm's Celery app and protocol on Redis;
- `evalfarm.gateway`  the HTTP front door (native, ELM, SandboxFusion and OpenRLHF routes);
- `evalfarm.trainers` reward functions for TRL and verl.

In a source checkout the rooms are the repository's top-level folders, beside this one: the
editable install (`make setup`, `pip install -e .`) maps each `evalfarm.<room>` to its folder (the
`package-dir` table of pyproject.toml), as an installed wheel holds them inside this one. Each file is
one module, `evalfarm.<room>.<name>`, whichever way it is reached.
"""

from __future__ import annotations

# The client's names: those of `evalfarm.broker`.
from evalfarm._exports import lazy
from evalfarm.broker import _EXPORTS

__version__ = "0.3.0.dev0"

# The rooms, each a subpackage `evalfarm.<room>` (a top-level folder of a checkout).
ROOMS = ("sandbox", "envs", "tasks", "broker", "gateway", "trainers", "workers")

__all__, __getattr__ = lazy("evalfarm", _EXPORTS)
