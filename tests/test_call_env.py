"""The call env (ELM / MAP-Elites): a function's return value as JSON, through the real sandbox."""

from __future__ import annotations

from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.scoring import score_job

DEEP: Any = 0
for _ in range(101):
    DEEP = [DEEP]


def call(ctx: Context, code: str, func_name: str = "f", **fields: Any) -> dict[str, Any]:
    return score_job({"id": "c", "env": "call", "code": code, "func_name": func_name, **fields}, ctx)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"func_name": None}, "func_name: required"),
        ({"code": None}, "code: required"),
        ({"func_name": "os.system"}, "func_name: String should match pattern"),
        ({"args": {"a": 1}}, "args: Input should be a valid list"),
        ({"kwargs": [1]}, "kwargs: Input should be a valid dictionary"),
        ({"kwargs": {"a": "x" * (1 << 20)}}, "kwargs: args and kwargs take"),
        ({"max_value_bytes": 0}, "max_value_bytes: Input should be greater than 0"),
        ({"max_value_bytes": 1 << 30}, "max_value_bytes: Input should be less than or equal to"),
        ({"code": "x" * (300 << 10)}, "code: String should have at most"),
        ({"limits": {"wall_s": -1}}, "limits.wall_s: must be in"),
        # Before, an argument nested past what the bridge carries failed the worker: infra_error.
        ({"args": [DEEP]}, "job: args and kwargs cannot cross as data: the value is nested more than"),
        ({"kwargs": {"a": DEEP}}, "job: args and kwargs cannot cross as data"),
    ],
)
def test_bad_jobs_are_invalid(fields: dict[str, Any], message: str) -> None:
    job = {"id": "c", "env": "call", "code": "def f(): return 1", "func_name": "f"} | fields
    job = {key: value for key, value in job.items() if value is not None}
    result = score_job(job, Context())
    assert (result["status"], result["reward"]) == ("invalid_job", None)
    assert result["error"].startswith(message), result["error"]


@pytest.mark.sandbox
def test_numpy_values_come_back_as_json(ctx: Context) -> None:
    code = "import numpy as np\ndef image(h, w, scale=1.0):\n    return np.ones((h, w)) * scale\n"
    result = call(ctx, code, "image", args=[2, 3], kwargs={"scale": 0.5})
    assert (result["status"], result["reward"], result["error"]) == ("ok", None, None)
    assert result["result"] == [[0.5] * 3] * 2


@pytest.mark.sandbox
def test_tuples_and_numpy_scalars(ctx: Context) -> None:
    code = "import numpy as np\ndef f():\n    return (np.int64(3), np.float32(1.5), {'walker': (1, 2)})\n"
    assert call(ctx, code)["result"] == [3, 1.5, {"walker": [1, 2]}]


@pytest.mark.sandbox
def test_elm_style_object_builder(ctx: Context) -> None:
    code = (
        "class Walker:\n    def __init__(self):\n        self.joints = []\n"
        "    def to_dict(self):\n        return {'joints': self.joints}\n"
        "def make_walker(n):\n    w = Walker()\n"
        "    w.joints = [[i, i + 1] for i in range(n)]\n    return w.to_dict()\n"
    )
    assert call(ctx, code, "make_walker", args=[3])["result"] == {"joints": [[0, 1], [1, 2], [2, 3]]}


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("code", "fields", "status", "error"),
    [
        ("def f(): return object()", {}, "runtime_error", "cannot cross as data: a value of type object"),
        ("def f(): return 'x' * 5000", {"max_value_bytes": 1000}, "output_limit", "over the cap"),
        ("x = 1", {}, "runtime_error", "'f' is not defined"),
        ("def f(): raise ValueError('nope')", {}, "runtime_error", ""),
        ("def f(:", {}, "syntax_error", "SyntaxError"),
        ("def f():\n    while True: pass", {"limits": {"wall_s": 1.0, "cpu_s": 0.5}}, "timeout", ""),
        ("import sys\nsys.exit(0)\ndef f(): return 1", {}, "runtime_error", ""),
    ],
)
def test_failures(ctx: Context, code: str, fields: dict[str, Any], status: str, error: str) -> None:
    result = call(ctx, code, **fields)
    assert (result["status"], result["result"], result["reward"]) == (status, None, None), result
    assert error in result["error"]


@pytest.mark.sandbox
def test_the_value_never_travels_as_pickle(ctx: Context) -> None:
    # An object whose unpickling would run code on the worker: the env only ever parses JSON.
    code = (
        "class Evil:\n    def __reduce__(self):\n        return (print, ('pwned',))\ndef f(): return Evil()\n"
    )
    result = call(ctx, code)
    assert result["status"] == "runtime_error" and "type Evil is not a plain value" in result["error"]
