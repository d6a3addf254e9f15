"""The contract every scorer implements: an env scores a job in a context (a sandbox slot, datasets)."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from evalfarm.limits import Limits

if TYPE_CHECKING:
    from evalfarm.envs.datasets import DatasetStore
    from evalfarm.sandbox import Sandbox


class EnvError(Exception):
    """Root of the errors raised by envs."""


class InvalidJob(EnvError):
    """The job is malformed: the message names the field at fault."""


class Env(abc.ABC):
    """A scorer registered under a stable id; bump `version` whenever scoring changes."""

    id: ClassVar[str]
    version: ClassVar[str]
    default_limits: ClassVar[Limits] = Limits()
    # The top-level fields its jobs take besides `id`, `env` and `limits`; others are ignored and
    # named in the result's `warnings`. Empty: not declared (nothing is named).
    fields: ClassVar[frozenset[str]] = frozenset()

    @abc.abstractmethod
    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Score one job; return at least `status` and `reward`. Raise InvalidJob for a bad job."""


class Context:
    """What an env may use while it scores: this process's sandbox slot and the loaded datasets.

    The sandbox starts on its first run, so envs that never run code (weight edits) never pay for it.
    """

    def __init__(
        self, slot: int = 0, datasets: DatasetStore | None = None, sandbox: Sandbox | None = None
    ) -> None:
        self.slot = slot
        self.datasets = datasets
        self._sandbox = sandbox  # a Sandbox already launched for this slot, if any

    @property
    def sandbox(self) -> Sandbox:
        """This slot's sandbox; its server starts with the first run (or `start()`)."""
        if self._sandbox is None:
            from evalfarm.envs.runtime import sandbox_config
            from evalfarm.sandbox import Sandbox

            self._sandbox = Sandbox(slot=self.slot, config=sandbox_config())
        return self._sandbox

    def take_sandbox_restarts(self) -> dict[str, int]:
        """The sandbox's restarts since the last call, by reason (none when it never started)."""
        return self._sandbox.take_restarts() if self._sandbox is not None else {}

    def close(self) -> None:
        """Stop the sandbox if it was started."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
