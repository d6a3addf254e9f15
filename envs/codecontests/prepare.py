"""deepmind/code_contests parquet shards -> the JSONL problem format of `envs.datasets`.

Follows seed 003's `prepare_cp_data.py`: one object per problem with `id` (the problem's `name`),
`description`, `public_tests`, `hidden_tests` (private tests then generated tests, capped by
`max_hidden`), plus `difficulty`; problems are filtered on a minimum number of public tests, a
difficulty range and a maximum count. Only the columns needed are read, batch by batch, so the large
`solutions` columns of the real shards load only when asked for (`max_solutions`: up to so many
Python 3, C++ and Java `solutions` and `incorrect_solutions` per problem, for `evalfarm datasets
lint`). No checker is set unless given (`checker`): the seed's comparison, `exact`, judges these
problems.

The problem's own resources, as deepmind/code_contests' `contest_problem.proto` gives them (fields 29
to 32): `time_limit` (a `google.protobuf.Duration`, `{seconds, nanos}` in the parquet shards) and
`memory_limit_bytes` become `limits` (every time limit multiplied by `time_scale`); `input_file` and
`output_file` ("Some problems expect specific files to be used instead", empty otherwise) become
`files`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from evalfarm.envs.codecontests.problem_limits import problem_limits
from evalfarm.envs.codecontests.problem_parts import Skipped
from evalfarm.envs.codecontests.rows import Row, iter_rows, source_files
from evalfarm.envs.codecontests.sources import Prepared, write_problems

COLUMNS = ("name", "description", "public_tests", "private_tests", "generated_tests", "difficulty")
RESOURCE_COLUMNS = ("time_limit", "memory_limit_bytes", "input_file", "output_file")
SOLUTION_COLUMNS = ("solutions", "incorrect_solutions")
# The Language enum of code_contests' problem proto -> the farm's (Python 2 is not run).
LANGUAGES = {2: "cpp", 3: "python", 4: "java"}


@dataclasses.dataclass(frozen=True)
class PrepareOptions:
    """Filters and caps of `prepare_codecontests` (defaults as in seed 003)."""

    max_hidden: int = 50
    min_public: int = 1
    min_difficulty: int | None = None
    max_difficulty: int | None = None
    max_samples: int | None = None
    max_solutions: int = 0
    checker: str | None = None
    time_scale: float = 1.0


def convert_row(row: dict[str, Any], options: PrepareOptions) -> dict[str, Any] | None:
    """One problem object from one row, or None when the filters drop it."""
    public = _pairs(row.get("public_tests"))
    hidden = (_pairs(row.get("private_tests")) + _pairs(row.get("generated_tests")))[: options.max_hidden]
    difficulty = row.get("difficulty")
    if len(public) < options.min_public or not hidden or not row.get("name"):
        return None
    if options.min_difficulty is not None and (difficulty is None or difficulty < options.min_difficulty):
        return None
    if options.max_difficulty is not None and (difficulty is None or difficulty > options.max_difficulty):
        return None
    problem = {
        "id": row["name"],
        "description": row.get("description") or "",
        "public_tests": public,
        "hidden_tests": hidden,
        "difficulty": difficulty,
    }
    problem.update(_resources(row, options.time_scale))
    if options.checker is not None:
        problem["checker"] = options.checker
    if options.max_solutions:
        for key in SOLUTION_COLUMNS:
            problem[key] = _solutions(row.get(key), options.max_solutions)
    return problem


def _resources(row: dict[str, Any], time_scale: float) -> dict[str, Any]:
    """The problem's `limits` and `files`, where its row gives them."""
    found: dict[str, Any] = {}
    duration = row.get("time_limit") or {}
    seconds = (duration.get("seconds") or 0) + (duration.get("nanos") or 0) / 1e9
    memory = row.get("memory_limit_bytes")
    limits = problem_limits(seconds, memory / (1 << 20) if memory else None, time_scale)
    if limits:
        found["limits"] = limits
    files = {side: row.get(f"{side}_file") for side in ("input", "output") if row.get(f"{side}_file")}
    if files:
        found["files"] = files
    return found


def _solutions(solutions: dict[str, Any] | None, limit: int) -> list[dict[str, str]]:
    """Up to `limit` {language, code} in languages the farm runs, from a {language, solution} struct."""
    if not solutions:
        return []
    pairs = zip(solutions.get("language") or [], solutions.get("solution") or [], strict=False)
    kept = [{"language": LANGUAGES[number], "code": code} for number, code in pairs if number in LANGUAGES]
    return kept[:limit]


def _pairs(tests: dict[str, Any] | None) -> list[dict[str, str]]:
    """A {input: [...], output: [...]} struct as a list of {input, output} pairs."""
    if not tests:
        return []
    inputs, outputs = tests.get("input") or [], tests.get("output") or []
    return [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=False)]


def prepare_codecontests(source: str | Path, out: str | Path, options: PrepareOptions) -> Prepared:
    """Write the problems of `source` kept by `options` to `out`."""
    columns = COLUMNS + RESOURCE_COLUMNS + (SOLUTION_COLUMNS if options.max_solutions else ())
    rows = iter_rows(source_files(source, (".parquet",)), required=COLUMNS, columns=columns)
    return write_problems(rows, lambda row: _kept(row, options), out, options.max_samples)


def _kept(row: Row, options: PrepareOptions) -> dict[str, Any]:
    problem = convert_row(row.values, options)
    if problem is None:
        raise Skipped("dropped by the filters (public tests, hidden tests, difficulty)")
    return problem
