"""The `call` env (ELM / MAP-Elites): run code, call one of its functions, return the value as JSON.

The sandbox execs `code`, calls `func_name(*args, **kwargs)`, and the return value crosses out of the
sandbox as data (`sandbox.values`, capped at `max_value_bytes`): never a pickle, never an object of
the program's. The worker decodes it into JSON as `json.dumps` would have written the value (numpy
arrays as nested lists, numpy scalars as numbers, tuples as lists). A value JSON cannot hold (a set,
bytes, an object), a raise, or bytes that are not an encoding are a runtime_error saying so; an
oversized value an output_limit. `reward` is always null.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import Field, JsonValue, field_validator, model_validator

from evalfarm.envs.base import Context, Env
from evalfarm.envs.catalog import ENVS
from evalfarm.envs.validation import JobModel, validate_job
from evalfarm.limits import Limits
from evalfarm.sandbox import values
from evalfarm.sandbox.bridge import REQUEST_DEPTH, parse_reply
from evalfarm.status import Status

MAX_CODE_CHARS = 256 << 10
MAX_ARGS_BYTES = 1 << 20  # args and kwargs together, as JSON
DEFAULT_VALUE_BYTES = 1 << 20
MAX_VALUE_BYTES = 16 << 20
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


class CallJob(JobModel):
    """A `call` job: code, the function to call, and its JSON arguments."""

    code: str = Field(max_length=MAX_CODE_CHARS)
    func_name: str = Field(max_length=256, pattern=IDENTIFIER)
    args: list[JsonValue] = Field(default_factory=list)
    kwargs: dict[str, JsonValue] = Field(default_factory=dict)
    max_value_bytes: int = Field(default=DEFAULT_VALUE_BYTES, gt=0, le=MAX_VALUE_BYTES)

    @field_validator("kwargs")
    @classmethod
    def _args_size(cls, kwargs: dict[str, JsonValue], info: Any) -> dict[str, JsonValue]:
        """Refuse arguments whose JSON is larger than MAX_ARGS_BYTES."""
        size = len(json.dumps([info.data.get("args"), kwargs]))
        if size > MAX_ARGS_BYTES:
            raise ValueError(f"args and kwargs take {size} bytes as JSON, more than {MAX_ARGS_BYTES}")
        return kwargs

    @model_validator(mode="after")
    def _crossing(self) -> CallJob:
        """Refuse arguments that cannot cross as data (nested past values.MAX_DEPTH)."""
        try:
            values.encode(["call", self.func_name, self.args, self.kwargs], max_depth=REQUEST_DEPTH)
        except values.Unencodable as error:
            raise ValueError(f"args and kwargs cannot cross as data: {error}") from None
        return self


class CallEnv(Env):
    """Returns what the untrusted code's function returned, as JSON in `result`."""

    id = "call"
    fields = ENVS[id].fields  # the catalog (envs/catalog.py) says what an env is
    version = ENVS[id].version
    default_limits = Limits(wall_s=10.0, cpu_s=5.0, memory_mb=1024)

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Build the CallSpec, run it, and map the run to a result."""
        from evalfarm.sandbox import (
            CallSpec,  # the package root, not a submodule: keeps the sandbox's public API
        )

        request = validate_job(CallJob, job)
        spec = CallSpec(request.func_name, list(request.args), dict(request.kwargs), request.max_value_bytes)
        run = ctx.sandbox.run(request.code, limits=limits, call=spec)
        fields = {"result": None, **run.to_fields()}
        status = run.status
        error: str | None = run.error or run.status.value
        if status is Status.OK:
            reply = parse_reply(run.reply, json_compatible=True)
            if reply.returned:
                return {
                    "status": Status.OK.value,
                    "reward": None,
                    "error": None,
                    **fields,
                    "result": reply.value,
                }
            status, error = Status.RUNTIME_ERROR, reply.error
        return {"status": status.value, "reward": None, "error": error, **fields}
