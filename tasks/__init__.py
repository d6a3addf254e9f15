"""Glue between envs and Celery: the chunk task and each worker child's scoring context."""

from tasks.chunk import jobs_of, register, score_jobs
from tasks.process import close_process, configure, open_process, process_context

__all__ = [
    "close_process",
    "configure",
    "jobs_of",
    "open_process",
    "process_context",
    "register",
    "score_jobs",
]
