"""Envs that exist only in the farm's integration tests, registered in workers via EVALFARM_EXTRA_ENVS.

They let a test hold a worker busy for a known time, or kill the worker process scoring a job, without
going through the sandbox (a sandboxed program cannot signal its worker, by design).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from typing import Any

from envs import Context, Env, InvalidJob
from sandbox import Limits, Status

EXTRA_ENVS = {"sleepy": "farm_test_envs:SleepEnv", "crash": "farm_test_envs:CrashEnv"}


class SleepEnv(Env):
    """Sleeps `sleep_s` and answers ok with reward 1, echoing `value` and the scoring pid."""

    id = "sleepy"
    version = "1"

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Sleep, then answer ok."""
        sleep_s = job.get("sleep_s", 0.0)
        if not isinstance(sleep_s, int | float) or not 0 <= sleep_s <= 5:
            raise InvalidJob("sleep_s: a number in [0, 5]")
        time.sleep(sleep_s)
        return {"status": Status.OK.value, "reward": 1.0, "value": job.get("value"), "pid": os.getpid()}


class CrashEnv(Env):
    """Kills the process scoring it: the job that always kills its worker."""

    id = "crash"
    version = "1"

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """SIGKILL this process."""
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")
