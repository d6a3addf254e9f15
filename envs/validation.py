"""Job validation with pydantic models: every rejection becomes an InvalidJob naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, model_validator

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


def language_name(value: str) -> str:
    """A job's `language`, in its own name (`javascript` -> `nodejs`); ValueError naming the ones
    there are (sandbox.languages)."""
    from evalfarm.sandbox import languages

    if value not in languages.NAMES:
        raise ValueError(f"{value!r} is not a language (one of {', '.join(languages.NAMES)})")
    return languages.canonical(value)


def require_language(sandbox: Any, language: str) -> None:
    """InvalidJob naming the languages this worker offers, when it does not offer `language` (its
    toolchain is not installed here, or its runtime needs a cgroup the slot lacks)."""
    if language == "python":
        return
    names = sandbox.offered_languages()
    if language not in names:
        raise InvalidJob(
            f"language: {language!r} is not offered by this worker (it offers {', '.join(names)})"
        )


# A job's `language` field: one of sandbox.languages.NAMES, read as its own name.
Language = Annotated[str, AfterValidator(language_name)]
