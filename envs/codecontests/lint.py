"""Finding a dataset's poisoned problems: its own solutions, judged as a trainer's samples would be.

A problem whose tests or checker reject one of its correct solutions scores correct samples 0; one
that accepts an incorrect solution scores wrong samples 1; one that cannot be judged (a checker it
lacks, a checker that fails) answers `judge_error`. `evalfarm datasets lint` sends each problem's
`solutions` and `incorrect_solutions` (as `evalfarm datasets prepare` writes them) through the farm
as `codecontests` jobs and sorts the problems by what their judging did.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from evalfarm.envs.datasets import Problem
from evalfarm.envs.validation import describe

# A problem's findings, worst first.
FINDINGS = ("unjudgeable", "rejects_correct", "accepts_wrong", "clean", "untested")


@dataclasses.dataclass
class ProblemLint:
    """What judging a problem's own solutions showed."""

    id: str
    correct: list[str] = dataclasses.field(default_factory=list)  # statuses of its correct solutions
    incorrect: list[str] = dataclasses.field(default_factory=list)  # and of its incorrect ones
    errors: list[str] = dataclasses.field(default_factory=list)  # the first judge_error's reason

    @property
    def finding(self) -> str:
        """unjudgeable, rejects_correct, accepts_wrong, clean, or untested (no solution ran)."""
        correct = [status for status in self.correct if status != "infra_error"]  # the farm's, not
        incorrect = [status for status in self.incorrect if status != "infra_error"]  # the problem's
        if "judge_error" in correct + incorrect:
            return "unjudgeable"
        if any(status != "ok" for status in correct):
            return "rejects_correct"
        if "ok" in incorrect:
            return "accepts_wrong"
        return "clean" if correct or incorrect else "untested"

    def to_dict(self) -> dict[str, Any]:
        """The problem's line in a lint report."""
        return {
            "id": self.id,
            "finding": self.finding,
            "correct": self.correct,
            "incorrect": self.incorrect,
            "errors": self.errors[:1],
        }


def lint_jobs(lines: Iterable[str], max_problems: int | None = None) -> tuple[list[str], list[str]]:
    """The `codecontests` jobs judging each problem's solutions (JSON texts), and a warning per line
    that is not a valid problem. Job ids are `<problem id>#c<n>` (correct) and `#w<n>` (incorrect)."""
    jobs: list[str] = []
    warnings: list[str] = []
    problems = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if max_problems is not None and problems >= max_problems:
            break
        try:
            row = json.loads(line)
            problem = Problem.model_validate(row).model_dump(exclude_none=True)
        except json.JSONDecodeError as error:
            warnings.append(f"line {number}: not JSON ({error.msg})")
            continue
        except ValidationError as error:
            warnings.append(f"line {number}: {describe(error)}")
            continue
        problems += 1
        for mark, key in (("c", "solutions"), ("w", "incorrect_solutions")):
            for index, solution in enumerate(row.get(key) or ()):
                job = {
                    "id": f"{problem['id']}#{mark}{index}",
                    "env": "codecontests",
                    "code": solution["code"],
                    "language": solution.get("language", "python"),
                    "problem": problem,
                }
                jobs.append(json.dumps(job))
    return jobs, warnings


def lint_report(results: Iterable[dict[str, Any]]) -> Iterator[ProblemLint]:
    """Each problem's findings from its jobs' results, in the order the problems came."""
    by_problem: dict[str, ProblemLint] = {}
    for result in results:
        problem_id, _, mark = str(result.get("id", "")).rpartition("#")
        lint = by_problem.setdefault(problem_id, ProblemLint(problem_id))
        status = result.get("status", "infra_error")
        (lint.correct if mark.startswith("c") else lint.incorrect).append(status)
        if status == "judge_error" and result.get("error"):
            lint.errors.append(str(result["error"]))
    yield from by_problem.values()
