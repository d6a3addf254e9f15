"""Scorers of untrusted code and weight-edit answers. Knows nothing of queues or metrics."""

from envs.base import Context, Env, EnvError, InvalidJob, make_result
from envs.registry import env_ids, get_env, register
from envs.scoring import score_job

__all__ = [
    "Context",
    "Env",
    "EnvError",
    "InvalidJob",
    "env_ids",
    "get_env",
    "make_result",
    "register",
    "score_job",
]
