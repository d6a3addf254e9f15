"""The per-process state of a worker child: its sandbox slot and datasets, in one `Context`.

A prefork child opens its context once (`open_process`, from the node's `worker_process_init`) and
every chunk it scores reuses it, so the sandbox's fork server starts once per child, not per job.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from envs import Context, register

if TYPE_CHECKING:
    from broker.settings import Settings

log = logging.getLogger(__name__)

_context: Context | None = None
_settings: Settings | None = None


def configure(settings: Settings | None) -> None:
    """Remember the node's settings and register the extra envs it names (in the parent, before fork)."""
    global _settings
    _settings = settings
    if settings is None:  # the defaults: no extra envs
        return
    for env_id, target in settings.extra_envs.items():
        register(env_id, target)
        log.info("registered extra env %r -> %s", env_id, target)


def open_process(slot: int, sandbox: object = None) -> Context:
    """Give this process its context on sandbox `slot` (or on `sandbox`, launched already by the
    parent), its sandbox started now if the node warms."""
    global _context
    close_process()
    _context = Context(slot=slot, datasets=_datasets(), sandbox=sandbox)
    if _settings is not None and _settings.warm_sandbox:
        try:
            _context.sandbox.start()  # the first job should not wait for the server
        except Exception:  # the first job that needs it will try again and answer infra_error
            log.exception("sandbox slot %d did not start", slot)
    return _context


def process_context() -> Context:
    """This process's context, opened on the node's first slot if the node did not open one."""
    if _context is None:
        return open_process(_settings.slot_base if _settings else 0)
    return _context


def close_process() -> None:
    """Stop this process's sandbox, if it started one."""
    global _context
    if _context is not None:
        _context.close()
        _context = None


def _datasets() -> object:
    """The datasets this node serves: a store over `datasets_dir`, loaded on first lookup."""
    from envs.datasets import DatasetStore, resolve_datasets_dir

    return DatasetStore(resolve_datasets_dir(_settings.datasets_dir if _settings else None))
