"""The text a model reads about its public-test run, for its next turn (in the format of seed 003)."""

from __future__ import annotations

import dataclasses

from evalfarm.envs.codecontests.extract import LANGUAGE_NAMES
from evalfarm.status import Status

# Each of input / expected / got / stderr is clipped to this many characters: a flood of output must
# not flood the model's context.
CLIP_CHARS = 512


@dataclasses.dataclass(frozen=True)
class PublicOutcome:
    """One public test as the model will see it (expected and got already normalised)."""

    passed: bool
    status: Status
    wall_s: float
    input: str
    expected: str
    got: str
    stderr: str = ""


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """`text` cut to `limit` characters, with a note saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters clipped]"


def format_feedback(outcomes: list[PublicOutcome], total: int | None = None) -> str:
    """Per test PASS/FAIL, status, milliseconds, input, expected, got (and stderr), then a summary line.

    `total` is the number of public tests when fewer were run (a syntax error stops the run).
    """
    total = len(outcomes) if total is None else total
    parts = [_format_one(number, total, outcome) for number, outcome in enumerate(outcomes, start=1)]
    passed = sum(outcome.passed for outcome in outcomes)
    parts.append(f"(public: {passed}/{total} passed)\n")
    return "".join(parts)


def _format_one(number: int, total: int, outcome: PublicOutcome) -> str:
    """The block of one public test."""
    verdict = "PASS" if outcome.passed else "FAIL"
    millis = int(outcome.wall_s * 1000)
    text = (
        f"=== public test {number}/{total} [{verdict} | {outcome.status.value} | {millis} ms]\n"
        f"input:\n{clip(outcome.input)}\n"
        f"expected:\n{clip(outcome.expected)}\n"
        f"got:\n{clip(outcome.got)}\n"
    )
    if outcome.stderr:
        text += f"stderr:\n{clip(outcome.stderr)}\n"
    return text


def parse_error_feedback(language: str = "python") -> str:
    """The feedback of an answer without a code block of its language."""
    name = LANGUAGE_NAMES[language]
    return f"No {name} code block found: put the program in a ```{language} fenced block.\n"
