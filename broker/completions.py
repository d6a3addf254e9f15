"""Where a model's answer goes in a job of each env, for adapters that start from an answer.

A trainer (or a reward server) holds a job template (the dataset's row: the problem, its tests, the
game) and the text the model wrote; the job is the template with that text in its env's answer
field. Kept here, with no import of the envs, so producers stay cheap to import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# Special tokens a chat template puts after the answer, as text decoded with them kept: `<|...|>`
# (ChatML's <|im_end|>, <|endoftext|>, Llama 3's <|eot_id|>), `</s>`, `<eos>`, `<end_of_turn>`.
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[^<>|\s]{1,40}\|>|</s>|<eos>|<end_of_turn>))+\s*$")

# env id -> the job field that carries the model's answer.
ANSWER_FIELDS = {
    "codecontests": "completion",
    "humaneval": "completion",
    "weight_edits": "answer",
    "program": "code",
    "call": "code",
    "elm": "code",
}


# env id -> the top-level fields its jobs take besides `id`, `env` and `limits` (the answer's
# included); a job's other fields are ignored and named in its result's `warnings`.
JOB_FIELDS = {
    "codecontests": ("completion", "code", "problem", "problem_id", "dataset", "reward_shape", "language",
                     "trajectory"),
    "humaneval": ("prompt", "completion", "test", "entry_point", "trajectory"),
    "weight_edits": ("game", "answer", "episodes", "source", "episode_range", "trajectory"),
    "program": ("code", "stdin", "files", "fetch_files", "language"),
    "call": ("code", "func_name", "args", "kwargs", "max_value_bytes"),
    "elm": ("code", "kind", "func_name"),
}  # fmt: skip
COMMON_FIELDS = ("id", "env", "limits")


class TemplateError(ValueError):
    """A job template that cannot become a job (not an object, no known env)."""


def parse_template(template: Any) -> dict[str, Any]:
    """A job template given as a dict or as its JSON text."""
    if isinstance(template, str | bytes):
        try:
            template = json.loads(template)
        except ValueError as error:
            raise TemplateError(f"not a JSON object: {error}") from None
    if not isinstance(template, Mapping):
        raise TemplateError(f"a job template must be an object, not {type(template).__name__}")
    return dict(template)


def job_from_template(
    template: Any, answer: str, job_id: str, default_env: str | None = None
) -> dict[str, Any]:
    """The job scoring `answer` against `template` (its env's answer field set, its id `job_id`)."""
    job = parse_template(template)
    env = job.get("env", default_env)
    if env not in ANSWER_FIELDS:
        known = ", ".join(sorted(ANSWER_FIELDS))
        raise TemplateError(f"env: {env!r} takes no answer (one of {known})")
    job.update(env=env, id=job_id)
    job[ANSWER_FIELDS[env]] = answer
    return job


def completion_of(query: str, prompt: str) -> str:
    """The model's part of a full sequence: `query` without its leading `prompt`, and without the
    special tokens that end the turn (a sequence decoded with special tokens kept)."""
    answer = query[len(prompt) :] if prompt and query.startswith(prompt) else query
    return _TRAILING_SPECIAL.sub("", answer)
