"""The farm's Celery app, its configuration and the producer's client.

Importing this package is cheap (no Celery, no envs): `Farm` imports Celery when it is built.
"""

from broker.batch import BatchStats
from broker.client import Farm
from broker.errors import ConfigError, FarmError
from broker.result import Result
from broker.settings import Settings

__all__ = ["BatchStats", "ConfigError", "Farm", "FarmError", "Result", "Settings"]
