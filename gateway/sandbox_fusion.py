"""SandboxFusion's `POST /run_code`, as verl's `sandbox_fusion` reward calls it, on the `program` env.

The request (SandboxFusion's `RunCodeRequest`): `code`, `language`, `stdin`, `compile_timeout`,
`run_timeout`, `memory_limit_MB` (-1: the env's default), `files` (path -> base64, written into the
working directory first) and `fetch_files` (paths whose contents come back, base64, in `files`).
The response (`RunCodeResponse`), HTTP 200 whatever the program did: `status` "Success" (it ran and
exited 0), "Failed" (a non-zero exit, a crash: `return_code` is minus the signal, a timeout:
`TimeLimitExceeded` with `return_code` null) or "SandboxError"; `run_result` with `status`
("Finished", "TimeLimitExceeded", "Error"), `execution_time`, `return_code`, `stdout`, `stderr`;
`compile_result` null for Python (it compiles nothing), for C++ the compile's `CommandRunResult`
(`Finished` with the compiler's `return_code`, or `TimeLimitExceeded`; a program that did not compile
has no `run_result` and answers "Failed", as SandboxFusion's runner does); `message`;
`executor_pod_name`; `files`. C++ runs as the farm's `cpp` (g++ -std=gnu++17 -O2, static), compiled
once per worker slot: the tests of a problem sent one request each reuse the binary.

A language in SandboxFusion's list that the farm does not run answers SandboxError, as SandboxFusion
does for a language it has no runner for; one outside its list answers 422 with pydantic's
`{"detail": [...]}`, as its FastAPI app does. A fault of the farm that outlived the farm's own retries
answers HTTP 504: the one status verl's client retries.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.broker.result import Result
from evalfarm.gateway.app import Gateway, RequestError, read_json, route
from evalfarm.gateway.responses import JSONResponse
from evalfarm.sandbox.languages import NAMES
from evalfarm.sandbox.limits import MAX_LIMITS

# SandboxFusion's `Language` (sandbox/runners/types.py).
Language = Literal[
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql", "rust",
    "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest",
    "verilog", "python_gpu", "lean", "swift", "racket", "c", "pypy3", "javascript",
]  # fmt: skip
RUNS = set(NAMES)  # the languages the farm runs (sandbox.languages)
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


async def run_code(request: Request, gateway: Gateway) -> Response:
    """Run the code as SandboxFusion would; answer in its shape."""
    body = await read_json(request, gateway.settings.gateway_max_body_bytes)
    try:
        parsed = RunCodeRequest.model_validate(body)
    except ValidationError as error:
        return JSONResponse(
            {"detail": error.errors(include_url=False, include_context=False)}, status_code=422
        )
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
    if result.is_infra:
        return JSONResponse(
            response("SandboxError", f"the farm failed: {result.get('error')}"), status_code=504
        )
    if result.get("status") == "invalid_job":
        return JSONResponse(response("SandboxError", f"invalid request: {result.get('error')}"))
    compiled = compile_result_of(result)
    if compiled is not None and (compiled["status"] != "Finished" or compiled["return_code"] != 0):
        return JSONResponse(response("Failed", "", None, result.get("files"), compiled))
    run = run_result_of(result)
    succeeded = run["status"] == "Finished" and run["return_code"] == 0
    status = "Success" if succeeded else "Failed"
    return JSONResponse(response(status, "", run, result.get("files"), compiled))


def routes(gateway: Gateway) -> list[Route]:
    """SandboxFusion's route."""
    return [route("/run_code", run_code, gateway, sandbox_fusion_error, ["POST"])]
