"""A worker process's scoring state: its node's settings and its sandbox slot's context.

A node builds one `WorkerProcess` before its pool forks, so every child inherits it, and each child
opens it on its own sandbox slot (`open`, from the node's `worker_process_init`); every chunk the
child scores reuses that context, so the sandbox's fork server starts once per child, not per job.
Nothing here is module state: whoever starts worker processes holds the object and hands it to the
task (`tasks.chunk.register`) and the hooks that need it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from evalfarm.broker.settings import WorkerSettings
from evalfarm.envs import Context, register

if TYPE_CHECKING:
    from evalfarm.envs.datasets import DatasetStore
    from evalfarm.sandbox import Sandbox

log = logging.getLogger(__name__)


class WorkerProcess:
    """One worker process's settings and, once opened, its sandbox slot's context."""

    def __init__(self, settings: WorkerSettings | None = None) -> None:
        self.settings = settings if settings is not None else WorkerSettings()
        self._context: Context | None = None
        for env_id, target in self.settings.extra_envs.items():  # in the parent, before fork
            register(env_id, target)
            log.info("registered extra env %r -> %s", env_id, target)

    def open(self, slot: int, sandbox: Sandbox | None = None) -> Context:
        """Give this process its context on sandbox `slot` (or on `sandbox`, launched already by
        the parent), its sandbox started now if the node warms."""
        self.close()
        self._context = Context(slot=slot, datasets=self._datasets(), sandbox=sandbox)
        if self.settings.warm_sandbox:
            try:
                self._context.sandbox.start()  # the first job should not wait for the server
            except Exception:  # the first job that needs it will try again and answer infra_error
                log.exception("sandbox slot %d did not start", slot)
        return self._context

    def context(self) -> Context:
        """This process's context, opened on the node's first slot if the node did not open one."""
        if self._context is None:
            return self.open(self.settings.slot_base)
        return self._context

    def close(self) -> None:
        """Stop this process's sandbox, if it started one."""
        if self._context is not None:
            self._context.close()
            self._context = None

    def _datasets(self) -> DatasetStore:
        """The datasets this node serves: a store over `datasets_dir`, loaded on first lookup."""
        from evalfarm.envs.datasets import DatasetStore, resolve_datasets_dir

        return DatasetStore(resolve_datasets_dir(self.settings.datasets_dir))
