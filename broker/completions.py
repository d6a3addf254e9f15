"""Where a model's answer goes in a job of each env, for adapters that start from an answer.

A trainer (or a reward server) holds a job template (the dataset's row: the problem, its tests, the
game) and the text the model wrote; the job is the template with that text in its env's answer
field (the catalog, `envs/catalog.py`, names it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from evalfarm.envs.catalog import answer_field, answering_envs

# Special tokens a chat template puts after the answer, as text decoded with them kept: `<|...|>`
# (ChatML's <|im_end|>, <|endoftext|>, Llama 3's <|eot_id|>), `</s>`, `<eos>`, `<end_of_turn>`.
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[^<>|\s]{1,40}\|>|</s>|<eos>|<end_of_turn>))+\s*$")


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
    field = answer_field(env)
    if field is None:
        raise TemplateError(f"env: {env!r} takes no answer (one of {', '.join(answering_envs())})")
    job.update(env=env, id=job_id)
    job[field] = answer
    return job


def completion_of(query: str, prompt: str) -> str:
    """The model's part of a full sequence: `query` without its leading `prompt`, and without the
    special tokens that end the turn (a sequence decoded with special tokens kept)."""
    answer = query[len(prompt) :] if prompt and query.startswith(prompt) else query
    return _TRAILING_SPECIAL.sub("", answer)
