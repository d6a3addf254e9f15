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

from evalfarm.envs import Context, Env, InvalidJob
from evalfarm.sandbox import Limits, Status

EXTRA_ENVS = {
    "sleepy": "farm_test_envs:SleepEnv",
    "crash": "farm_test_envs:CrashEnv",
    "flaky": "farm_test_envs:FlakyEnv",
}


class SleepEnv(Env):
    """Sleeps `sleep_s` and answers ok with reward 1, echoing `value` and the scoring pid.

    With `runs_log` (a file path), each run appends the job's id to that file first, so a test can
    count how often each job really ran.
    """

    id = "sleepy"
    version = "1"

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Sleep, then answer ok."""
        sleep_s = job.get("sleep_s", 0.0)
        if not isinstance(sleep_s, int | float) or not 0 <= sleep_s <= 5:
            raise InvalidJob("sleep_s: a number in [0, 5]")
        if isinstance(job.get("runs_log"), str):
            with open(job["runs_log"], "a") as log:
                log.write(f"{job['id']}\n")
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


class FlakyEnv(Env):
    """Answers infra_error (the farm failed, as a lost sandbox would) the first `fail_times` times
    a job is scored, then ok. Tries are counted in the file `tries_log` (one line per try)."""

    id = "flaky"
    version = "1"

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Count this try; infra_error until the job has failed `fail_times` times."""
        path, fail_times = job.get("tries_log"), job.get("fail_times", 1)
        if not isinstance(path, str) or not isinstance(fail_times, int):
            raise InvalidJob("tries_log: a path; fail_times: an integer")
        with open(path, "a+") as log:
            log.seek(0)
            tries = log.read().split().count(job["id"]) + 1
            log.write(f"{job['id']}\n")
        if tries <= fail_times:
            return {"status": Status.INFRA_ERROR.value, "reward": None, "error": f"flaky try {tries}"}
        return {"status": Status.OK.value, "reward": 1.0, "tries": tries}
