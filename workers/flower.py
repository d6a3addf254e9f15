"""The farm's Celery app for Flower: `celery -A evalfarm.workers.flower flower`.

Flower given only `--broker URL` builds a plain Celery app, which knows neither the farm's transport
nor, for Redis Sentinel, the master's name. This app is the one every node and producer uses, made
from the same `EVALFARM_*` variables (`EVALFARM_BROKER_URL`, `EVALFARM_REDIS_MASTER`), so Flower
reaches the farm's Redis however it is given: plain, with a password, `rediss://` (TLS) or Sentinel.
"""

from __future__ import annotations

from evalfarm.broker.app import make_app
from evalfarm.broker.settings import FarmSettings

app = make_app(FarmSettings.from_env())
