"""The `elm` env: OpenELM's sandbox semantics (`unsafe_execute`), run in evalfarm's sandbox.

OpenELM's sandbox server execs a program, calls one of its functions and returns the value: a
Sodarace walker for `/gen_racer`, an image (an ndarray) for `/eval_imageoptim_func`, any value for
`/eval_p3_solution`. This env does the same for a job `{"code", "kind", "func_name"}` (OpenELM's
timeout is the job's `limits`: `wall_s` and `cpu_s`):

- `kind` "walker": call `make_walker()` (or `func_name`); the value must be a `Walker` of the walker
  API sandboxed programs import (`envs/sandbox_lib`), which is checked with its own `validate()`;
  `result_obj` is its `to_dict()`. "image": the value must be a numpy array; `result_obj` is
  `repr(value.tolist())`. "value": `result_obj` is `repr(value)` (a range or generator is listed first).
- `exec_result` names how the code failed, as OpenELM's `ExecResult` does: `SYNTAX_ERROR`,
  `TYPE_ERROR` (a TypeError), `TIMEOUT_EXCEPTION` (past the time limits), `EXCEPTION` (any other
  failure, and code that is empty or defines no function, which OpenELM refuses before running it).
- `check` says what the value was: `valid` / `invalid_walker` / `not_walker`, `image` / `not_image`.

Status: `ok` for a valid walker, an image, or any value; `wrong_answer` when the code ran but its
value is not what the kind asks for; the run's own status otherwise (`syntax_error`, `timeout`,
`runtime_error`, ...). `reward` is always null: a MAP-Elites loop scores the object itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from envs.base import Context, Env
from envs.validation import JobModel, validate_job
from sandbox import CallSpec, Limits, Status

MAX_CODE_CHARS = 256 << 10
# OpenELM's own check before it runs anything: code with no function definition is an EXCEPTION.
_DEFINITION = re.compile(r"def (\w+)\s*\((.*?)\):")
_HARNESS_NAME = "__evalfarm_elm__"
# Appended to the program (after a blank line, so its own line numbers hold): call the function as
# OpenELM's unsafe_execute does, then judge and serialise the value inside the sandbox.
_HARNESS = f"""


def {_HARNESS_NAME}(kind, func_name):
    value = globals()[func_name]()
    if isinstance(value, range) or (hasattr(value, "__iter__") and not hasattr(value, "__len__")):
        value = list(value)
    if kind == "walker":
        from openelm.environments.sodaracer.walker import Walker
        if not isinstance(value, Walker):
            return {{"check": "not_walker"}}
        return {{"check": "valid" if value.validate() else "invalid_walker", "result_obj": value.to_dict()}}
    if kind == "image":
        import numpy
        if not isinstance(value, numpy.ndarray):
            return {{"check": "not_image"}}
        return {{"check": "image", "result_obj": repr(value.tolist())}}
    return {{"result_obj": repr(value)}}
"""
_EXEC_RESULTS = {
    Status.SYNTAX_ERROR: "SYNTAX_ERROR",
    Status.TIMEOUT: "TIMEOUT_EXCEPTION",
}
_FAILED_CHECKS = {"invalid_walker", "not_walker", "not_image"}


class ElmJob(JobModel):
    """An `elm` job: the program, and what its function (by default OpenELM's) must return."""

    code: str = Field(max_length=MAX_CODE_CHARS)
    kind: Literal["walker", "image", "value"] = "value"
    func_name: str | None = Field(default=None, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class ElmEnv(Env):
    """OpenELM's sandbox semantics: run code, call a function, return (and judge) its value."""

    id = "elm"
    version = "1"
    # OpenELM discards what a program prints: a large cap, so printing never fails a program.
    default_limits = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=1024, output_bytes=16 << 20)

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Run the job's code with the harness; map the run to OpenELM's outcome."""
        request = validate_job(ElmJob, job)
        definitions = _DEFINITION.findall(request.code) if "def " in request.code else []
        if not definitions:
            return _failed(Status.RUNTIME_ERROR, "EXCEPTION", "the code defines no function")
        func_name = request.func_name or ("make_walker" if request.kind == "walker" else definitions[-1][0])
        spec = CallSpec(_HARNESS_NAME, [request.kind, func_name])
        run = ctx.sandbox.run(request.code + _HARNESS, limits=limits, call=spec)
        if run.status is not Status.OK:
            if run.status is Status.INFRA_ERROR:
                return _failed(run.status, None, run.error)
            name = _EXEC_RESULTS.get(
                run.status, "TYPE_ERROR" if run.exception == "TypeError" else "EXCEPTION"
            )
            return _failed(run.status, name, run.error or run.status.value, run.stderr)
        value = _decoded(run.value)
        check = value.get("check")
        failed = isinstance(check, str) and check in _FAILED_CHECKS
        return {
            "status": (Status.WRONG_ANSWER if failed else Status.OK).value,
            "reward": None,
            "error": f"the value is {str(check).replace('_', ' ')}" if failed else None,
            "exec_result": None,
            "check": check,
            "result_obj": value.get("result_obj"),
            **_costs(run),
        }


def _decoded(value: str | None) -> dict[str, Any]:
    import json

    decoded = json.loads(value) if value else None
    if not isinstance(decoded, dict):
        raise RuntimeError("the elm harness returned no outcome")
    return decoded


def _costs(run: Any) -> dict[str, Any]:
    return {"wall_s": round(run.wall_s, 6), "cpu_s": round(run.cpu_s, 6)}


def _failed(
    status: Status, exec_result: str | None, error: str | None, stderr: bytes = b""
) -> dict[str, Any]:
    return {
        "status": status.value,
        "reward": None,
        "error": error,
        "exec_result": exec_result,
        "check": None,
        "result_obj": None,
        "stderr": stderr[-4096:].decode("utf-8", "replace"),
    }
