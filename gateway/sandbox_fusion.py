"""SandboxFusion's `POST /run_code`, as verl's `sandbox_fusion` reward calls it, on the `program` env.

The request (SandboxFusion's `RunCodeRequest`): `code`, `language`, `stdin`, `compile_timeout`,
`run_timeout`, `memory_limit_MB` (-1: the env's default), `files` (path -> base64, written into the
working directory first) and `fetch_files` (paths whose contents come back, base64, in `files`).
The response (`RunCodeResponse`), HTTP 200 whatever the program did: `status` "Success" (it ran and
exited 0), "Failed" (a non-zero exit, a crash: `return_code` is minus the signal, a timeout:
`TimeLimitExceeded` with `return_code` null) or "SandboxError"; `run_result` with `status`
("Finished", "TimeLimitExceeded", "Error"), `execution_time`, `return_code`, `stdout`, `stderr`;
`compile_result` null for Python, Node.js and PyPy (SandboxFusion compiles none of them: a syntax
error is the run's failure), for C++ and the other compiled languages the compile's `CommandRunResult`
(`Finished` with the compiler's `return_code`, or `TimeLimitExceeded`; a program that did not compile
has no `run_result` and answers "Failed", as SandboxFusion's runner does); `message`;
`executor_pod_name`; `files`. C++ runs as the farm's `cpp` (g++ -std=gnu++17 -O2, static), compiled
once per worker slot: the tests of a problem sent one request each reuse the binary.

`POST /run_jupyter` (SandboxFusion's `RunJupyterRequest` and `RunJupyterResponse`) runs its cells in a
session that lives for the request (`gateway.sessions`).

A language in SandboxFusion's list that the farm does not run answers SandboxError, as SandboxFusion
does for a language it has no runner for; one outside its list answers 422 with pydantic's
`{"detail": [...]}`, as its FastAPI app does. A program's own failure (a compile error or timeout, a
crash, a signal, a memory, output or time limit) is never an HTTP error: "Failed", as SandboxFusion
answers it. Only a fault of the farm that outlived the farm's own retries answers HTTP 504 (the one
status verl's client retries), with SandboxFusion's SandboxError body (`answer_of`).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.broker.session_client import MAX_RUN_TIMEOUT_S, SessionResult, SessionSpec
from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway, RequestError, read_json, route
from evalfarm.limits import MAX_LIMITS
from evalfarm.result import Result
from evalfarm.sandbox.languages import NAMES, canonical

# SandboxFusion's `Language` (sandbox/runners/types.py).
Language = Literal[
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql", "rust",
    "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest",
    "verilog", "python_gpu", "lean", "swift", "racket", "c", "pypy3", "javascript",
]  # fmt: skip
RUNS = set(NAMES)  # the languages the farm runs (sandbox.languages)
# What SandboxFusion runs with no compile step: the farm's syntax check of a Node.js or PyPy program
# is its compile, but here a program that fails it answers as SandboxFusion's run of it does (a run
# that exits 1 with the SyntaxError on its stderr), with no `compile_result`.
_SCRIPTS = {"python", "nodejs", "pypy3"}
_CLIENT_MARGIN_S = 8.0  # under the 10 s verl's client adds to a request's compile and run timeouts


class RunCodeRequest(BaseModel):
    """SandboxFusion's request, with its defaults."""

    model_config = ConfigDict(extra="ignore")
    compile_timeout: float = 10
    run_timeout: float = 10
    memory_limit_MB: int = -1  # SandboxFusion's name
    code: str
    stdin: str | None = None
    language: Language
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


def sandbox_fusion_error(error: RequestError) -> Response:
    """FastAPI's error shape, which SandboxFusion's clients see."""
    return JSONResponse({"detail": error.message}, status_code=error.status)


def response(
    status: str,
    message: str = "",
    run_result: dict[str, Any] | None = None,
    files: Any = None,
    compile_result: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `RunCodeResponse`."""
    return {
        "status": status,
        "message": message,
        "compile_result": compile_result,
        "run_result": run_result,
        "executor_pod_name": os.environ.get("HOSTNAME") or None,
        "files": files or {},
    }


def run_result_of(result: Result) -> dict[str, Any]:
    """The `CommandRunResult` of a program's result."""
    timed_out = result.get("status") == "timeout"
    return {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": result.get("wall_s"),
        "return_code": None if timed_out else _return_code(result),
        "stdout": result.get("stdout", ""),
        "stderr": result.get("stderr", ""),
    }


def compile_result_of(result: Result) -> dict[str, Any] | None:
    """The compile's `CommandRunResult` of a compiled program's result (None for Python)."""
    compiled = result.get("compile")
    if not isinstance(compiled, dict):
        return None
    failed = compiled.get("status") != "ok"
    timed_out = compiled.get("status") == "timeout"
    return {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": compiled.get("wall_s"),
        "return_code": None if timed_out else int(failed),
        "stdout": "",
        "stderr": result.get("stderr", "") if failed else "",
    }


def _return_code(result: Result) -> int:
    """The exit code as a subprocess reports it: minus the signal for a killed program."""
    if isinstance(result.get("exit_code"), int):
        return int(result["exit_code"])
    if isinstance(result.get("signal"), int):
        return -int(result["signal"])
    return 0 if result.get("status") == "ok" else 1


def job_of(parsed: RunCodeRequest) -> dict[str, Any]:
    """The `program` job of a request."""
    seconds = min(max(float(parsed.run_timeout), 0.001), MAX_LIMITS.wall_s)
    limits: dict[str, Any] = {"wall_s": seconds, "cpu_s": seconds}
    if parsed.language != "python":
        limits["compile_wall_s"] = min(max(float(parsed.compile_timeout), 0.001), MAX_LIMITS.compile_wall_s)
    if parsed.memory_limit_MB > 0:
        limits["memory_mb"] = min(parsed.memory_limit_MB, MAX_LIMITS.memory_mb)
    return {
        "id": "run_code",
        "env": "program",
        "code": parsed.code,
        "stdin": parsed.stdin or "",
        "files": parsed.files,
        "fetch_files": parsed.fetch_files,
        "language": parsed.language,
        "limits": limits,
    }


Parsed = TypeVar("Parsed", bound=BaseModel)


async def _parsed(request: Request, gateway: Gateway, model: type[Parsed]) -> Parsed | Response:
    """The body as `model`, or the 422 with pydantic's `{"detail": [...]}` SandboxFusion's FastAPI
    app answers."""
    body = await read_json(request, gateway.settings.gateway_max_body_bytes)
    try:
        return model.model_validate(body)
    except ValidationError as error:
        return JSONResponse(
            {"detail": error.errors(include_url=False, include_context=False)}, status_code=422
        )


async def run_code(request: Request, gateway: Gateway) -> Response:
    """Run the code as SandboxFusion would; answer in its shape."""
    parsed = await _parsed(request, gateway, RunCodeRequest)
    if isinstance(parsed, Response):
        return parsed
    if parsed.language not in RUNS:
        message = (
            f"language {parsed.language!r} is not run by this sandbox (it runs: {', '.join(sorted(RUNS))})"
        )
        return JSONResponse(response("SandboxError", message))
    job = job_of(parsed)
    # verl's client waits compile_timeout + run_timeout + 10 s: answer within that, so that a fault
    # reaches it as a 504 (which it retries) before it gives up on its own.
    deadline_s = job["limits"]["wall_s"] + job["limits"].get("compile_wall_s", 0.0) + _CLIENT_MARGIN_S
    [result] = await gateway.score("/run_code", [job], deadline_s)
    body, http_status = answer_of(result, parsed.language)
    return JSONResponse(body, status_code=http_status)


def answer_of(result: Result, language: str = "python") -> tuple[dict[str, Any], int]:
    """The `RunCodeResponse` of a program's result, and its HTTP status.

    A verdict on the program, whatever it is, is HTTP 200 in SandboxFusion's shapes ("Success" or
    "Failed" with the compile's and the run's results). A result with no verdict is "SandboxError",
    as SandboxFusion answers when its runner fails: HTTP 504 for a fault of the farm (infra_error,
    after the farm's retries), the one status verl's client posts again (it scores a 200
    SandboxError, and any other non-2xx, as an API error at once); HTTP 200 for a request the farm
    refused (invalid_job) or a result with no verdict that no retry changes (judge_error).
    `language`: the request's, in SandboxFusion's names.
    """
    if result.is_infra:
        return response("SandboxError", f"the farm failed: {result.get('error')}"), 504
    if not result.has_reward:
        return response("SandboxError", f"{result.status}: {result.get('error')}"), 200
    # SandboxFusion compiles neither Node.js nor PyPy (nor Python): their syntax error is the run's.
    compiled = compile_result_of(result) if canonical(language) not in _SCRIPTS else None
    if compiled is not None and (compiled["status"] != "Finished" or compiled["return_code"] != 0):
        return response("Failed", "", None, result.get("files"), compiled), 200
    run = run_result_of(result)
    succeeded = run["status"] == "Finished" and run["return_code"] == 0
    return response("Success" if succeeded else "Failed", "", run, result.get("files"), compiled), 200


class RunJupyterRequest(BaseModel):
    """SandboxFusion's `/run_jupyter` request, with its defaults."""

    model_config = ConfigDict(extra="ignore")
    cells: list[str]
    cell_timeout: float = 0  # 0: a cell may take what is left of total_timeout
    total_timeout: float = 45
    memory_limit_MB: int = -1
    kernel: Literal["python3"] = "python3"
    files: dict[str, str] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


# The cells the gateway adds around the request's: the files in before, the fetched files out after
# (as JSON on stdout). Functions, deleted once run, so the notebook's names stay the request's own.
_WRITE_FILES = """def _evalfarm_write(files):
    import base64, os
    for path, content in files.items():
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(content))
_evalfarm_write({files!r}); del _evalfarm_write"""
_FETCH_FILES = """def _evalfarm_fetch(paths):
    import base64, json, os, sys
    found = {{p: base64.b64encode(open(p, "rb").read()).decode() for p in paths if os.path.isfile(p)}}
    sys.stdout.write(json.dumps(found))
_evalfarm_fetch({paths!r}); del _evalfarm_fetch"""
_JUPYTER_OUTPUT_BYTES = 16 << 20


def jupyter_response(status: str, message: str = "", cells: list[Any] | None = None, files: Any = None,
                     driver: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """A `RunJupyterResponse`."""
    return {
        "status": status,
        "message": message,
        "driver": driver,
        "cells": cells or [],
        "executor_pod_name": os.environ.get("HOSTNAME") or None,
        "files": files or {},
    }


def cell_of(result: SessionResult) -> dict[str, Any]:
    """A `CellRunResult` of a run: a notebook's streams, its display (the figures it showed, as
    `image/png`, then the last expression's value as `text/plain`) and its error (ename, evalue,
    traceback; the traceback not also in stderr)."""
    stderr = result.stderr
    error = []
    if result.exception is not None:
        error = [result.exception]
        printed = "".join(result.exception.get("traceback") or ())
        if printed and stderr.endswith(printed):
            stderr = stderr[: -len(printed)]
    display = [dict(bundle) for bundle in result.display]  # its figures, as display_data
    shown = bool(display) and display[-1].get("text/plain") == result.value  # a rich value's bundle
    if result.value is not None and not shown:
        display.append({"text/plain": result.value})
    return {"stdout": result.stdout, "stderr": stderr, "display": display, "error": error}


async def run_jupyter(request: Request, gateway: Gateway) -> Response:
    """Run the cells one after another in a session that lives for the request, as SandboxFusion's
    Jupyter kernel does: a cell's exception is in its `error`, and the next cells still run. A cell
    past `cell_timeout`, the cells past `total_timeout`, or a cell that ends the interpreter answer
    "Failed" with no cells, as SandboxFusion does when its driver does not finish."""
    parsed = await _parsed(request, gateway, RunJupyterRequest)
    if isinstance(parsed, Response):
        return parsed
    total_s = min(max(float(parsed.total_timeout), 0.001), MAX_RUN_TIMEOUT_S)
    limits: dict[str, Any] = {"timeout_s": total_s, "output_bytes": _JUPYTER_OUTPUT_BYTES}
    if parsed.memory_limit_MB > 0:
        limits["memory_mb"] = min(parsed.memory_limit_MB, MAX_LIMITS.memory_mb)
    spec = SessionSpec.model_validate({"ttl_s": total_s + 60, "limits": limits})
    try:
        session = await gateway.sessions.open(spec)
    except RequestError as error:  # no room, or no node: the farm's, which verl's client retries
        return JSONResponse(jupyter_response("SandboxError", error.message), status_code=504)
    try:
        return JSONResponse(await _run_cells(gateway, session, parsed, total_s))
    finally:
        await gateway.sessions.close(session)


async def _run_cells(
    gateway: Gateway, session: Any, parsed: RunJupyterRequest, total_s: float
) -> dict[str, Any]:
    started = time.monotonic()

    def left_s() -> float:
        spent = time.monotonic() - started
        return min(parsed.cell_timeout, total_s - spent) if parsed.cell_timeout > 0 else total_s - spent

    if parsed.files:
        setup = await gateway.sessions.run(session, _WRITE_FILES.format(files=parsed.files), None, total_s)
        if setup.status != "ok":
            return jupyter_response("Failed", f"the files could not be written: {setup.error}")
    cells = []
    for code in parsed.cells:
        timeout_s = left_s()
        result = await gateway.sessions.run(session, code, None, timeout_s) if timeout_s > 0 else None
        if result is None or result.status == "timeout" or not result.session_alive:
            why = result.error if result is not None else "no time was left for the cell"
            status = "TimeLimitExceeded" if result is None or result.status == "timeout" else "Error"
            return jupyter_response("Failed", why or "", driver=_driver(status, started))
        cells.append(cell_of(result))
    files: dict[str, str] = {}
    if parsed.fetch_files:
        fetched = await gateway.sessions.run(
            session, _FETCH_FILES.format(paths=parsed.fetch_files), None, total_s
        )
        try:
            files = {str(k): str(v) for k, v in json.loads(fetched.stdout).items()}
        except (ValueError, AttributeError):
            files = {}
    return jupyter_response("Success", "", cells, files, _driver("Finished", started))


def _driver(status: str, started: float) -> dict[str, Any]:
    """The `driver`'s `CommandRunResult`: the session's, as a whole."""
    finished = status == "Finished"
    return {
        "status": status,
        "execution_time": round(time.monotonic() - started, 6),
        "return_code": 0 if finished else None,
        "stdout": "",
        "stderr": "",
    }


def routes(gateway: Gateway) -> list[Route]:
    """SandboxFusion's routes."""
    return [
        route("/run_code", run_code, gateway, sandbox_fusion_error, ["POST"]),
        route("/run_jupyter", run_jupyter, gateway, sandbox_fusion_error, ["POST"]),
    ]
