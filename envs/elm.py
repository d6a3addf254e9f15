"""The `elm` env: OpenELM's sandbox semantics (`unsafe_execute`), run in evalfarm's sandbox.

OpenELM's sandbox server execs a program, calls one of its functions and returns the value: a
Sodarace walker for `/gen_racer`, an image (an ndarray) for `/eval_imageoptim_func`, any value for
`/eval_p3_solution`. This env does the same for a job `{"code", "kind", "func_name"}` (OpenELM's
timeout is the job's `limits`: `wall_s` and `cpu_s`):

- `kind` "walker": call `make_walker()` (or `func_name`); the value must be a `Walker` of the walker
  API sandboxed programs import (`envs/sandbox_lib`); its joints and muscles cross as data and the
  worker checks them with OpenELM's `validate()` rule (`walker_problems`); `result_obj` is its
  `to_dict()`. "image": the value must be a numpy array; `result_obj` is
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

import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from evalfarm.envs.base import Context, Env
from evalfarm.envs.catalog import ENVS
from evalfarm.envs.validation import JobModel, validate_job
from evalfarm.sandbox import CallSpec, Limits, Status
from evalfarm.sandbox.bridge import parse_reply

MAX_CODE_CHARS = 256 << 10
# OpenELM's own check before it runs anything: code with no function definition is an EXCEPTION.
_DEFINITION = re.compile(r"def (\w+)\s*\((.*?)\):")
_HARNESS_NAME = "__evalfarm_elm__"
# Appended to the program (after a blank line, so its own line numbers hold): call the function as
# OpenELM's unsafe_execute does and hand back its value as data. It runs in the program's process,
# so nothing it says is believed: a walker's validity is decided by the worker (`walker_problems`),
# on the joints and muscles that crossed, never by a `validate()` the program could have replaced.
_HARNESS = f"""


def {_HARNESS_NAME}(kind, func_name):
    value = globals()[func_name]()
    if isinstance(value, range) or (hasattr(value, "__iter__") and not hasattr(value, "__len__")):
        value = list(value)
    if kind == "walker":
        from openelm.environments.sodaracer.walker import Walker
        if not isinstance(value, Walker):
            return {{"check": "not_walker"}}
        return {{"check": "walker", "walker": {{"joints": value.joints, "muscles": value.muscles}}}}
    if kind == "image":
        import numpy
        if not isinstance(value, numpy.ndarray):
            return {{"check": "not_image"}}
        return {{"check": "image", "image": value}}
    return {{"result_obj": repr(value)}}
"""
_EXEC_RESULTS = {
    Status.SYNTAX_ERROR: "SYNTAX_ERROR",
    Status.TIMEOUT: "TIMEOUT_EXCEPTION",
}
_FAILED_CHECKS = {"invalid_walker", "not_walker", "not_image"}
# OpenELM's walker rule (its walk_creator's `validate`), as the worker applies it to the data.
MAX_MUSCLE_STRENGTH = 10
MAX_MUSCLES_PER_JOINT = 10
MIN_JOINT_DISTANCE = 0.003


class ElmJob(JobModel):
    """An `elm` job: the program, and what its function (by default OpenELM's) must return."""

    code: str = Field(max_length=MAX_CODE_CHARS)
    kind: Literal["walker", "image", "value"] = "value"
    func_name: str | None = Field(default=None, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class ElmEnv(Env):
    """OpenELM's sandbox semantics: run code, call a function, return (and judge) its value."""

    id = "elm"
    fields = ENVS[id].fields  # the catalog (envs/catalog.py) says what an env is
    version = ENVS[id].version
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
        reply = parse_reply(run.reply, json_compatible=True)
        if not reply.returned or not isinstance(reply.value, dict):
            name = "TYPE_ERROR" if reply.raised == "TypeError" else "EXCEPTION"
            return _failed(
                Status.RUNTIME_ERROR, name, reply.error or "the harness returned no outcome", run.stderr
            )
        return _judged(request.kind, reply.value, run)


def _judged(kind: str, value: dict[str, Any], run: Any) -> dict[str, Any]:
    """The result of a harness's outcome, judged here: the outcome is the program's data (its process
    wrote it), so only what it holds counts, never a `check` it claims."""
    check, result_obj = None, value.get("result_obj") if kind == "value" else None
    if kind == "walker":
        walker = value.get("walker")
        problems = walker_problems(walker) if walker is not None else ["not a walker"]
        if problems is None:
            return _failed(Status.RUNTIME_ERROR, "EXCEPTION", "the walker is malformed", run.stderr)
        check = "not_walker" if walker is None else "invalid_walker" if problems else "valid"
        result_obj = walker if walker is not None else None
    elif kind == "image":
        check = "image" if "image" in value else "not_image"
        result_obj = repr(value["image"]) if check == "image" else None
    if kind == "value" and not isinstance(result_obj, str):
        return _failed(Status.RUNTIME_ERROR, "EXCEPTION", "the harness returned no value", run.stderr)
    failed = check in _FAILED_CHECKS
    return {
        "status": (Status.WRONG_ANSWER if failed else Status.OK).value,
        "reward": None,
        "error": f"the value is {str(check).replace('_', ' ')}" if failed else None,
        "exec_result": None,
        "check": check,
        "result_obj": result_obj,
        **_costs(run),
    }


def walker_problems(walker: Any) -> list[str] | None:
    """Why a walker (its `to_dict()` as data) breaks OpenELM's rule; [] when valid, None when it is
    not a walker's data at all (OpenELM's `validate()` would raise on it).

    The rule: not empty; no "muscle" stronger than 10; no joint at the end of more than 10 muscles;
    no two joints closer than 0.003. Checked in linear time (the pairs by a grid of that size), so a
    program cannot make the worker spend a quadratic time on its walker.
    """
    try:
        joints = [(_number(x), _number(y)) for x, y in walker["joints"]]
        muscles = walker["muscles"]
        ends = [muscle[:2] for muscle in muscles]
        strong = any(m[-1]["type"] == "muscle" and m[-1]["amplitude"] > MAX_MUSCLE_STRENGTH for m in muscles)
    except (TypeError, KeyError, IndexError, ValueError, OverflowError):
        return None
    if not joints and not muscles:
        return ["the walker is empty"]
    problems = ["a muscle is stronger than 10"] if strong else []
    apart = _joints_apart(joints)
    if apart is None:
        return None
    if not apart:
        return [*problems, "two joints are closer than 0.003"]
    # The joints are now distinct: each one's index in the list is its own position.
    counts = [0] * len(joints)
    for pair in ends:
        for end in pair:
            if type(end) in (int, bool) and 0 <= end < len(joints):
                counts[end] += 1
            elif type(end) is float and end.is_integer() and 0 <= end < len(joints):
                counts[int(end)] += 1
    if any(count > MAX_MUSCLES_PER_JOINT for count in counts):
        problems.append("a joint ends more than 10 muscles")
    return problems


def _number(value: Any) -> float:
    if type(value) not in (int, float, bool):
        raise TypeError("a joint's coordinate is not a number")
    return float(value)


def _joints_apart(joints: list[tuple[float, float]]) -> bool | None:
    """Whether no two joints are closer than MIN_JOINT_DISTANCE, as OpenELM computes it (None where
    its computation raises: a difference whose square overflows). As there, a distance that is not
    a number (a joint at nan, or two at the same infinity) is not too close."""
    if len(joints) < 2:
        return True
    if _squares_overflow(joints):
        return None
    cells: dict[tuple[float, float], list[tuple[float, float]]] = {}
    for joint in joints:  # a grid of the minimum distance: only neighbours can be too close
        cx, cy = _cell(joint[0]), _cell(joint[1])
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                if any(_too_close(joint, other) for other in cells.get((cx + dx, cy + dy), ())):
                    return False
        cells.setdefault((cx, cy), []).append(joint)
    return True


def _cell(coordinate: float) -> float:
    """A coordinate's grid cell; where the division overflows, the coordinate itself (out there two
    distinct floats are farther apart than the minimum distance, so only equal ones can be close)."""
    cell = coordinate / MIN_JOINT_DISTANCE
    return math.floor(cell) if math.isfinite(cell) else coordinate  # nan: a cell of its own


def _too_close(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) < MIN_JOINT_DISTANCE


def _squares_overflow(joints: list[tuple[float, float]]) -> bool:
    """Whether some two joints differ by a finite amount whose square overflows (`** 2` raises;
    OpenELM's pairwise check does raise there). The farthest from any value are the extremes."""
    for axis in (0, 1):
        values = [joint[axis] for joint in joints if math.isfinite(joint[axis])]
        if len(values) < 2:
            continue
        low, high = min(values), max(values)
        for value in values:
            for difference in (value - low, high - value):
                if math.isfinite(difference) and math.isinf(difference * difference):
                    return True
    return False


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
