"""Agent trajectories: the answer a verifier grades is the last assistant message's content.

The format is seed 004's: `{"steps": [{"messages": [{"role": ..., "content": ...}, ...]}, ...]}`,
where content is a string or a list of parts whose `text` fields are joined with newlines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalfarm.envs.base import InvalidJob


def last_assistant_content(trajectory: Any) -> str | None:
    """The last assistant message's text, or None when no assistant message has string or list content.

    Raises AttributeError or TypeError, as the reference does, when the trajectory is not made of
    JSON objects where objects are expected.
    """
    for step in reversed(trajectory.get("steps") or []):
        for message in reversed(step.get("messages") or []):
            if message.get("role") != "assistant":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                texts = [item.get("text", "") for item in content if isinstance(item, dict)]
                return "\n".join(texts)
    return None


def assistant_answer(trajectory: Any) -> str:
    """The answer to grade, exactly as seed 004's `assistant_answer`: "" when there is none."""
    content = last_assistant_content(trajectory)
    return "" if content is None else content


def answer_field(job: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    """`job` with `field` taken from its `trajectory` when the job gives a trajectory instead.

    Any env whose answer is model text (`completion`, `answer`) accepts the same trajectory object a
    verifier reads; a malformed one is an InvalidJob naming `trajectory`.
    """
    if field in job or "trajectory" not in job:
        return job
    try:
        answer = assistant_answer(job["trajectory"])
    except (AttributeError, TypeError) as error:
        raise InvalidJob(f"trajectory: not in the steps/messages format: {error}") from None
    return {**job, field: answer}
