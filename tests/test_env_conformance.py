"""Every registered env keeps the contract: statuses, result shape, invalid jobs, determinism."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.registry import env_ids
from evalfarm.envs.scoring import score_job
from evalfarm.status import Status

# A valid job per env id: a new env must add one here (the coverage test below says so).
EXAMPLES: dict[str, dict[str, Any]] = {
    "program": {"code": "print(input()[::-1])", "stdin": "abc\n"},
    "codecontests": {
        "completion": "```python\nprint(sum(map(int, input().split())))\n```",
        "problem": {
            "id": "add",
            "public_tests": [{"input": "1 2\n", "output": "3\n"}],
            "hidden_tests": [{"input": "2 2\n", "output": "4\n"}, {"input": "5 5\n", "output": "11\n"}],
        },
        "reward_shape": "fraction_passed",
    },
    "humaneval": {
        "prompt": "def add(a, b):\n",
        "completion": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "entry_point": "add",
    },
    "call": {"code": "import numpy as np\ndef f(n):\n    return np.eye(n)", "func_name": "f", "args": [2]},
    "weight_edits": {"game": "breakout", "answer": "I would not change anything.", "episodes": 1},
    "elm": {
        "code": "from openelm.environments.sodaracer.walker import walker_creator\n"
        "def make_walker():\n    wc = walker_creator()\n    a, b = wc.add_joint(0, 0), wc.add_joint(1, 1)\n"
        "    wc.add_muscle(a, b, 2.0, 0.5)\n    return wc.get_walker()\n",
        "kind": "walker",
    },
}
RESULT_KEYS = {"id", "env", "status", "code", "reward", "error", "run_s", "env_version", "limits"}
TIMING_KEYS = {"run_s", "queued_s", "wall_s", "cpu_s", "max_rss_mb"}
CONTRACT_STATUSES = {status.value for status in Status}


def untimed(value: Any) -> Any:
    """`value` without timing fields (at any depth) and with milliseconds in texts masked."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if key not in TIMING_KEYS}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    if isinstance(value, str):
        return re.sub(r"\d+ ms\b", "N ms", value)
    return value


def job(env_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"conformance-{env_id}", "env": env_id, **EXAMPLES[env_id], **fields}


def test_every_registered_env_has_an_example() -> None:
    missing = sorted(set(env_ids()) - set(EXAMPLES))
    assert not missing, f"add a valid example job for {missing} to EXAMPLES in this file"


@pytest.mark.sandbox
@pytest.mark.parametrize("env_id", env_ids())
def test_valid_job_gives_a_contract_result(ctx: Context, env_id: str) -> None:
    result = score_job(job(env_id), ctx)
    assert set(result) >= RESULT_KEYS, RESULT_KEYS - set(result)
    assert result["status"] in CONTRACT_STATUSES - {"invalid_job", "infra_error"}, result
    assert (result["id"], result["env"]) == (f"conformance-{env_id}", env_id)
    assert result["code"] == Status(result["status"]).code
    assert result["reward"] is None or 0.0 <= result["reward"] <= 1.0
    assert (result["error"] is None) == (result["status"] == "ok")
    json.dumps(result)  # JSON all the way


@pytest.mark.sandbox
@pytest.mark.parametrize("env_id", env_ids())
def test_same_job_twice_gives_the_same_result(ctx: Context, env_id: str) -> None:
    first, second = score_job(job(env_id), ctx), score_job(job(env_id), ctx)
    assert untimed(first) == untimed(second)


@pytest.mark.parametrize("env_id", env_ids())
def test_job_without_its_fields_is_invalid(env_id: str) -> None:
    result = score_job({"id": "bare", "env": env_id}, Context())
    assert (result["status"], result["code"], result["reward"]) == ("invalid_job", 10, None)
    assert re.match(r"^[\w./]+: ", result["error"]), result["error"]  # names the field


@pytest.mark.parametrize("env_id", env_ids())
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"limits": {"memory_mb": 10**9}}, "limits.memory_mb"),
        ({"limits": "fast"}, "limits"),
        ({"id": 3}, "id"),
    ],
)
def test_bad_common_fields_are_invalid(env_id: str, change: dict[str, Any], field: str) -> None:
    result = score_job(job(env_id) | change, Context())
    assert result["status"] == "invalid_job" and result["error"].startswith(f"{field}:"), result


def test_unknown_env_is_invalid() -> None:
    result = score_job({"id": "x", "env": "nope"}, Context())
    assert result["status"] == "invalid_job" and result["error"].startswith("env: unknown env 'nope'")


def test_code_envs_import_no_queue_or_metrics_code() -> None:
    modules = [
        "evalfarm.envs",
        "evalfarm.envs.codecontests",
        "evalfarm.envs.humaneval",
        "evalfarm.envs.call",
        "evalfarm.envs.datasets",
    ]
    script = (
        f"import sys\nfor name in {modules!r}:\n    __import__(name)\n"
        "print([m for m in ('celery', 'redis', 'kombu', 'prometheus_client') if m in sys.modules])"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"
