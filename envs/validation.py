"""Job validation with pydantic models: every rejection becomes an InvalidJob naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evalfarm.envs.base import InvalidJob

ModelT = TypeVar("ModelT", bound=BaseModel)


class JobModel(BaseModel):
    """Base of job models: strict types (no "1" for 1), a field given as None absent, unknown fields
    tolerated (the scoring layer names them in the result's `warnings`), immutable."""

    # Jobs also carry `id`, `env`, `limits`: those are not the env's to refuse.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _none_is_absent(cls, data: Any) -> Any:
        """A field given as None is a field not given (what `datasets` writes for a key a row lacks):
        its default applies, or it is reported as required."""
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


def validate_job(model: type[ModelT], job: Mapping[str, Any]) -> ModelT:
    """`job` parsed as `model`; InvalidJob naming the first bad field otherwise."""
    try:
        return model.model_validate(dict(job))
    except ValidationError as error:
        raise InvalidJob(describe(error)) from None


def describe(error: ValidationError) -> str:
    """A one-line message for the first error: "field.sub.0: what is wrong"."""
    first = error.errors(include_url=False)[0]
    field = ".".join(str(part) for part in first["loc"]) or "job"
    message = first["msg"]
    if first["type"] == "missing":
        message = "required"
    elif first["type"] == "value_error":
        message = message.removeprefix("Value error, ")
    return f"{field}: {message}"
