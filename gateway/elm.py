"""OpenELM's sandbox server routes (`src/openelm/sandbox/server/index.py`), on the farm's `elm` env.

- `POST /gen_racer` `{"code": str or [str], "timeout": float}`: runs `make_walker()`. A valid walker
  answers 200 `{"program_str", "result_obj"}` (the walker's `to_dict()`); a list of codes answers
  200 with the list of bodies, in order, each a success or an error body.
- `POST /eval_imageoptim_func` `{"code", "func_name", "timeout"}`: the value must be an ndarray;
  `result_obj` is `repr(value.tolist())`.
- `POST /eval_p3_solution` `{"code", "func_name", "timeout"}`: `result_obj` is `repr(value)`.
  OpenELM's P3 client sends no `func_name`: then the last function the code defines is called, as
  OpenELM's `unsafe_execute` does.

Errors are HTTP 500 `{"message", "unsafe_execute_error_code"}`, as there: "Failed
sandbox_unsafe_execute" with the `ExecResult` name (TIMEOUT_EXCEPTION, SYNTAX_ERROR, TYPE_ERROR,
EXCEPTION); "Invalid walker" (with `walker`), "Not walker" and "Not image" with code 1; "Failed to
execute code" with code 6 when the farm could not run it (after its retries). A malformed request
is 400 in the same shape (code 6). `timeout` is the run's wall and CPU limit (<= 0: the env's 10 s).
What this implements is what the server means, not its bugs: it serves concurrent requests (the
original's SIGALRM timer fails in Flask's threads and then kills the server), answers "Not image"
(the original forgets to return it), and gives P3 its timeout (the original passes it as `args`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway, RequestError, read_body, route
from evalfarm.result import Result

_MAX_TIMEOUT_S = 600.0
_QUEUE_MARGIN_S = 60.0  # beyond the run's own timeout, for waiting in the farm's queues
_CHECK_ERRORS = {"invalid_walker": "Invalid walker", "not_walker": "Not walker", "not_image": "Not image"}


class ElmRequest(BaseModel):
    """A body of OpenELM's routes (unknown keys ignored, as the original does)."""

    model_config = ConfigDict(extra="ignore")
    code: str | list[str]
    timeout: float | None = None
    func_name: str | None = None


def elm_error(error: RequestError) -> Response:
    """OpenELM's error shape."""
    return JSONResponse({"message": error.message, "unsafe_execute_error_code": 6}, status_code=error.status)


def body_of(result: Result, code: str) -> tuple[dict[str, Any], int]:
    """What OpenELM's server answers for one program: its body and HTTP status."""
    if result.get("status") == "ok":
        return {"program_str": code, "result_obj": result.get("result_obj")}, 200
    check = result.get("check")
    if check == "invalid_walker":
        return {
            "message": "Invalid walker",
            "walker": result.get("result_obj"),
            "unsafe_execute_error_code": 1,
        }, 500
    if check in _CHECK_ERRORS:
        return {"message": _CHECK_ERRORS[check], "unsafe_execute_error_code": 1}, 500
    if result.get("exec_result"):
        return {
            "message": "Failed sandbox_unsafe_execute",
            "unsafe_execute_error_code": result["exec_result"],
        }, 500
    return {"message": "Failed to execute code", "unsafe_execute_error_code": 6}, 500


def _job(index: int, code: str, kind: str, parsed: ElmRequest) -> dict[str, Any]:
    job: dict[str, Any] = {"id": f"elm-{index}", "env": "elm", "code": code, "kind": kind}
    if parsed.func_name:
        job["func_name"] = parsed.func_name
    if parsed.timeout is not None and parsed.timeout > 0:
        seconds = min(float(parsed.timeout), _MAX_TIMEOUT_S)
        job["limits"] = {"wall_s": seconds, "cpu_s": seconds}
    return job


async def _parse(request: Request, gateway: Gateway) -> ElmRequest:
    return await read_body(request, gateway.settings.gateway_max_body_bytes, ElmRequest)


def _handler(kind: Literal["walker", "image", "value"], route_path: str) -> Any:
    async def handle(request: Request, gateway: Gateway) -> Response:
        parsed = await _parse(request, gateway)
        codes = parsed.code if isinstance(parsed.code, list) else [parsed.code]
        if isinstance(parsed.code, list) and kind != "walker":
            raise RequestError(400, "code: a string")
        gateway.check_count(len(codes), "codes")
        timeout = parsed.timeout if parsed.timeout and parsed.timeout > 0 else 10.0
        jobs = [_job(i, code, kind, parsed) for i, code in enumerate(codes)]
        results = await gateway.score(route_path, jobs, min(timeout, _MAX_TIMEOUT_S) + _QUEUE_MARGIN_S)
        bodies = [body_of(result, code) for result, code in zip(results, codes, strict=True)]
        if isinstance(parsed.code, list):
            return JSONResponse([body for body, _ in bodies], status_code=200)
        body, status = bodies[0]
        return JSONResponse(body, status_code=status)

    return handle


def routes(gateway: Gateway) -> list[Route]:
    """OpenELM's three routes."""
    return [
        route("/gen_racer", _handler("walker", "/gen_racer"), gateway, elm_error, ["POST"]),
        route(
            "/eval_imageoptim_func", _handler("image", "/eval_imageoptim_func"), gateway, elm_error, ["POST"]
        ),
        route("/eval_p3_solution", _handler("value", "/eval_p3_solution"), gateway, elm_error, ["POST"]),
    ]
