"""open-r1/codeforces, judged as open-r1 judges it.

Its scorer (huggingface/open-r1, `src/open_r1/utils/competitive_programming/cf_scoring.py`) runs a
program on the problem's `official_tests` followed by its generated tests, read from
`generated_tests/test_cases_{contest:04d}.parquet` (columns `problem_id`, `input`, `output`,
`test_case_i`) and grouped by `problem_id`. Its runner (guipenedo/piston,
`packages/codeforces/1.0.0/run`) removes the `\\r` that ends a line (`sed 's/\\r$//'`) from the input
and the expected output before the program and the checker see them; for `input_mode: file`, it
leaves `input.txt` in the working directory, discards the program's stdout and reads `output.txt`;
it gives a test `time_limit` seconds (wall clock, unscaled) and `memory_limit` MB.

The dataset card's `verifiable` subset is `executable` and (`official_tests_complete` or generated
tests): a problem outside it is skipped, since its tests are the few that Codeforces shows
(truncated) and a wrong program passes them. A problem that has generated tests when the folder
holding them was not found is judged on its official tests only where those are complete, and
skipped where they are not; `prepare` says how many.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evalfarm.envs.codecontests.problem_limits import problem_limits
from evalfarm.envs.codecontests.problem_parts import Skipped, missing, pairs_of_list, section
from evalfarm.envs.codecontests.rows import Row

GENERATED = "generated_tests"  # the folder of the generated tests, beside `data/`
_LINE_END_CR = re.compile(r"\r(?=\n)|\r\Z")


def strip_cr(text: str) -> str:
    """`text` without the `\\r` that ends each line, as open-r1's runner reads a test."""
    return _LINE_END_CR.sub("", text)


def generated_folder(source: Path) -> Path | None:
    """Where the generated tests of a dataset at `source` are: in it, or beside its `data/`."""
    for folder in (source, source.parent, source.parent.parent):
        if (folder / GENERATED).is_dir():
            return folder / GENERATED
    return None


class GeneratedTests:
    """open-r1/codeforces' generated tests, one parquet file per contest, read per problem."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def of(self, problem_id: str, limit: int) -> list[dict[str, str]] | None:
        """Up to `limit` generated tests of `problem_id` in `test_case_i` order; None when the
        folder, or the contest's file, is not there."""
        if self.folder is None or limit <= 0:
            return None if self.folder is None else []
        contest = problem_id.split("/")[0]
        path = self.folder / f"test_cases_{int(contest):04d}.parquet" if contest.isdigit() else None
        if path is None or not path.is_file():
            return None
        import pyarrow.parquet as pq  # a tooling dependency: workers never need it

        table = pq.read_table(
            path, columns=["input", "output", "test_case_i"], filters=[("problem_id", "==", problem_id)]
        )
        rows = sorted(table.to_pylist(), key=lambda row: row["test_case_i"])[:limit]
        return [{"input": row["input"], "output": row["output"]} for row in rows]


def reader(source: Path, options: Any) -> Any:
    """The reader of open-r1/codeforces rows at `source`."""
    generated = GeneratedTests(generated_folder(source))
    return lambda row: openr1_codeforces(row, options, generated)


def openr1_codeforces(row: Row, options: Any, generated: GeneratedTests) -> dict[str, Any]:
    """A problem of open-r1/codeforces, with its tests as open-r1's scorer runs them."""
    values = row.values
    if not values.get("id"):
        raise Skipped("no id")
    if values.get("executable") is False:
        raise Skipped("not executable (open-r1's `executable`)")
    official = pairs_of_list(values.get("official_tests"))
    hidden = official + _generated(values, generated, options.max_hidden - len(official))
    if not hidden:
        raise Skipped("no official or generated test")
    sections = [
        values.get("description"),
        section("Input", values.get("input_format")),
        section("Output", values.get("output_format")),
        section("Interaction", values.get("interaction_format")),
        section("Note", values.get("note")),
    ]
    problem: dict[str, Any] = {
        "id": values["id"],
        "description": "\n\n".join(part for part in sections if part),
        "public_tests": [_stripped(test) for test in pairs_of_list(values.get("examples"))],
        "hidden_tests": [_stripped(test) for test in hidden[: options.max_hidden]],
        "difficulty": values.get("rating"),
        "checker": options.checker,
    }
    limits = problem_limits(values.get("time_limit"), values.get("memory_limit"), options.time_scale)
    if limits:
        problem["limits"] = limits
    mode = values.get("input_mode") or "stdio"
    if values.get("interaction_format"):
        problem["checker"] = missing("an interactive problem: open-r1/codeforces ships no interactor")
    elif mode not in ("stdio", "file"):
        problem["checker"] = missing(f"input_mode {mode!r}: not one open-r1's runner knows")
    elif values.get("generated_checker"):
        checker = {"type": "program", "language": "python", "protocol": "openr1"}
        problem["checker"] = checker | {"code": values["generated_checker"]}
    if mode == "file":
        problem["files"] = {"input": "input.txt", "output": "output.txt"}
    return problem


def _generated(values: dict[str, Any], generated: GeneratedTests, room: int) -> list[dict[str, str]]:
    """The problem's generated tests (as many as fit `room`), or Skipped when its official tests
    are truncated and no generated test can complete them."""
    complete = values.get("official_tests_complete") is not False
    if not values.get("generated_tests"):
        if complete:
            return []
        raise Skipped("official tests truncated and no generated test (outside open-r1's verifiable subset)")
    tests = generated.of(str(values["id"]), room)
    if tests is None and not complete:
        raise Skipped("official tests truncated and its generated tests not found (no generated_tests/)")
    return tests or []


def _stripped(test: dict[str, str]) -> dict[str, str]:
    return {"input": strip_cr(test["input"]), "output": strip_cr(test["output"])}
