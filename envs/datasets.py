"""Problem sets of stdin/stdout tests: the JSONL format, its loader, and the store workers look up.

File format: one JSON object per line, one problem each (what `evalfarm datasets prepare` writes):
`{"id": str, "description": str, "public_tests": [{"input": str, "output": str}, ...],
"hidden_tests": [...]}` and, optionally, how it is judged: `checker`, `interactor`, `fn_name`
(function-call tests: `input` the arguments, `output` the expected value), `checker_wall_s`,
`float_tolerance` (see `envs/codecontests/checkers.py`); an interactive problem's `solutions`
(`[{"language", "code"}, ...]`, the dataset's correct programs: its interactor's reference when it
fails, `envs/codecontests/interactive.py`); what it allows a program, `limits` (its dataset's
`cpu_s`, `wall_s`, `memory_mb`: a job's `limits` override them); where its program reads and
writes, `files` (`{"input": "input.txt", "output": "output.txt"}`: names in the program's working
directory; absent, stdin and stdout). Other keys (`difficulty`, the `solutions` of other problems,
which `evalfarm datasets lint` reads from the file itself) are kept out of the way; in a job's
inline `problem` they are refused by name.

A worker makes datasets available by id from one directory (its `datasets_dir` setting, e.g. the
EVALFARM_DATASETS_DIR variable read by the worker's settings, never here): `<dataset_id>.jsonl` files,
installed there by `evalfarm datasets load FILE.jsonl`, which validates the file and writes it
atomically. A `DatasetStore` over that directory loads a dataset on first need and looks again for new
files whenever a job names a problem or dataset it does not hold, so a dataset installed while the
workers run is found without a restart. A dataset id is never overwritten in place unless asked
(`--replace`); workers that already loaded it keep the old copy until they restart.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from evalfarm.envs.base import EnvError, InvalidJob
from evalfarm.envs.validation import JobModel, Language, describe
from evalfarm.limits import MAX_LIMITS

log = logging.getLogger(__name__)

# Caps of one problem, inline in a job or in a dataset line.
MAX_TESTS = 1000  # per list (public, hidden)
MAX_TEST_CHARS = 8 << 20  # per input and per expected output
MAX_ARGUMENTS = 64  # per call of a function-call test
MAX_PROBLEM_CHARS = 64 << 20  # all inputs and outputs of a problem together
MAX_SOLUTIONS = 4  # an interactive problem's solutions kept (the first its worker runs is used)
MAX_SOLUTION_CHARS = 256 << 10
MAX_WARNINGS = 10  # malformed lines reported one by one per file; the rest only counted
# Where datasets live when the caller's setting (EVALFARM_DATASETS_DIR) is unset.
DEFAULT_DATASETS_DIR = Path("~/.local/share/evalfarm/datasets")
DATASET_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class DatasetError(EnvError):
    """A dataset file or directory cannot be used (missing, unreadable, bad id)."""


class IOPair(JobModel):
    """One test: stdin and the expected stdout; for a function-call problem (`fn_name`), the
    arguments (a JSON array, or a string of one JSON value per line) and the expected return value."""

    input: str | list[Any]
    output: Any = None

    @field_validator("input")
    @classmethod
    def _input_capped(cls, value: str | list[Any]) -> str | list[Any]:
        if isinstance(value, str) and len(value) > MAX_TEST_CHARS:
            raise ValueError(f"String should have at most {MAX_TEST_CHARS} characters")
        if isinstance(value, list) and len(value) > MAX_ARGUMENTS:
            raise ValueError(f"a call takes at most {MAX_ARGUMENTS} arguments")
        return value

    def size(self) -> int:
        """Characters the test weighs (its JSON for a function-call test)."""
        weigh = lambda value: len(value) if isinstance(value, str) else len(json.dumps(value))  # noqa: E731
        return weigh(self.input) + weigh(self.output)


# What a problem may say about how it is judged (`envs/codecontests/checkers.py`).
JUDGING_FIELDS = ("checker", "interactor", "fn_name", "checker_wall_s", "solutions")
# A file a problem's program reads or writes: a plain name in its working directory.
FILE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"


class ProblemLimits(JobModel):
    """A problem's own limits, from its dataset: CPU seconds per test, the wall clock, memory."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    cpu_s: float | None = Field(default=None, gt=0, le=MAX_LIMITS.cpu_s)
    wall_s: float | None = Field(default=None, gt=0, le=MAX_LIMITS.wall_s)
    memory_mb: int | None = Field(default=None, gt=0, le=MAX_LIMITS.memory_mb)


class ProblemFiles(JobModel):
    """Where a problem's program reads its test (`input`) and writes its answer (`output`), in its
    working directory; a side not named is stdin or stdout. `stdio`: the judge allows both, so the
    input is on stdin too, and stdout is the answer when the output file is left empty."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    input: str | None = Field(default=None, pattern=FILE_NAME)
    output: str | None = Field(default=None, pattern=FILE_NAME)
    stdio: bool = False

    @model_validator(mode="after")
    def _names_one(self) -> ProblemFiles:
        if self.input is None and self.output is None:
            raise ValueError("files: name `input`, `output` or both")
        if self.input is not None and self.input == self.output:
            raise ValueError("files: `input` and `output` are one file")
        return self


class Solution(JobModel):
    """A correct program a dataset ships with its problem: an interactor's reference."""

    language: Language = "python"
    code: str = Field(min_length=1, max_length=MAX_SOLUTION_CHARS)


class Problem(JobModel):
    """A problem: public tests give feedback, hidden tests decide the reward."""

    id: str = Field(min_length=1, max_length=256)
    description: str = ""
    public_tests: list[IOPair] = Field(default_factory=list, max_length=MAX_TESTS)
    hidden_tests: list[IOPair] = Field(min_length=1, max_length=MAX_TESTS)
    float_tolerance: float | None = Field(default=None, gt=0, lt=1)
    # How its outputs are judged: a comparison's name or object, or a checker program (`checker`);
    # an interactor program talking to the solution (`interactor`); a function the tests call
    # (`fn_name`). A checker program's wall clock per test: `checker_wall_s`.
    checker: str | dict[str, Any] | None = None
    interactor: dict[str, Any] | None = None
    fn_name: str | None = Field(
        default=None, min_length=1, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    checker_wall_s: float = Field(default=10.0, gt=0, le=60)
    # An interactive problem's correct solutions (the dataset's): its interactor's reference.
    solutions: list[Solution] | None = None

    @model_validator(mode="before")
    @classmethod
    def _solutions_of_interactive_problems(cls, data: Any) -> Any:
        """Keep `solutions` (the first MAX_SOLUTIONS) only on a problem with an interactor, the one
        judge that uses them; other problems' solutions stay out of the way, as before."""
        if not isinstance(data, dict) or "solutions" not in data:
            return data
        if data.get("interactor") is None:
            return {key: value for key, value in data.items() if key != "solutions"}
        if isinstance(data["solutions"], list):
            return {**data, "solutions": data["solutions"][:MAX_SOLUTIONS]}
        return data

    # What its dataset allows a program (`limits`), and the files it reads and writes (`files`).
    limits: ProblemLimits | None = None
    files: ProblemFiles | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Problem:
        """Refuse a problem whose tests add up to more than MAX_PROBLEM_CHARS, or whose tests do not
        fit how it is judged (stdin tests take text; function-call tests take arguments)."""
        tests = (*self.public_tests, *self.hidden_tests)
        size = sum(test.size() for test in tests)
        if size > MAX_PROBLEM_CHARS:
            raise ValueError(f"tests total {size} characters, more than {MAX_PROBLEM_CHARS}")
        if self.fn_name is None:
            for name in ("public_tests", "hidden_tests"):
                for index, test in enumerate(getattr(self, name)):
                    for part in ("input", "output"):
                        if not isinstance(getattr(test, part), str):
                            raise ValueError(
                                f"{name}.{index}.{part}: a stdin test's {part} is text "
                                "(function-call tests need fn_name)"
                            )
        elif self.interactor is not None:
            raise ValueError("fn_name and interactor: a problem is one or the other")
        if self.files is not None and (self.fn_name is not None or self.interactor is not None):
            raise ValueError("files: a problem of function calls or with an interactor reads no file")
        return self


@dataclasses.dataclass(frozen=True)
class Caps:
    """What a loader keeps of a file: at most `max_problems`, and so many tests of each problem."""

    max_problems: int | None = None
    max_public: int | None = None
    max_hidden: int | None = None
    min_public: int = 0


@dataclasses.dataclass
class Loaded:
    """The problems read from a file and how many lines were skipped."""

    problems: list[Problem]
    skipped: int = 0


def load_problems(path: str | Path, caps: Caps = Caps(), max_warnings: int = MAX_WARNINGS) -> Loaded:
    """The problems of a JSONL file under `caps`; malformed lines are skipped with bounded warnings.

    A problem with no hidden test, fewer public tests than `caps.min_public`, or an id seen before in
    the file is skipped like a malformed line. A missing file is a DatasetError.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    loaded, seen = Loaded([]), set()
    for number, line in _lines(path):
        if caps.max_problems is not None and len(loaded.problems) >= caps.max_problems:
            break
        try:
            problem = _parse_line(line, caps)
            if problem.id in seen:
                raise ValueError(f"id: duplicate problem id {problem.id!r}")
        except ValueError as error:
            loaded.skipped += 1
            if loaded.skipped <= max_warnings:
                log.warning("%s:%d: skipped: %s", path, number, error)
            continue
        seen.add(problem.id)
        loaded.problems.append(problem)
    if loaded.skipped > max_warnings:
        log.warning("%s: %d more lines skipped", path, loaded.skipped - max_warnings)
    return loaded


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines of `path` with their 1-based numbers."""
    with path.open(encoding="utf-8", errors="replace") as file:
        for number, line in enumerate(file, start=1):
            if line.strip():
                yield number, line


def _parse_line(line: str, caps: Caps) -> Problem:
    """One line as a Problem with the test caps applied; ValueError naming the fault otherwise."""
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    for key, cap in (("public_tests", caps.max_public), ("hidden_tests", caps.max_hidden)):
        if cap is not None and isinstance(raw.get(key), list):
            raw[key] = raw[key][:cap]
    try:
        problem = Problem.model_validate(raw)
    except ValidationError as error:
        raise ValueError(describe(error)) from None
    if len(problem.public_tests) < caps.min_public:
        raise ValueError(f"public_tests: fewer than {caps.min_public}")
    return problem


def check_dataset_id(dataset_id: str) -> str:
    """`dataset_id` if it is a valid id (letters, digits, `_.-`, at most 64); DatasetError otherwise."""
    if not DATASET_ID.fullmatch(dataset_id):
        raise DatasetError(f"bad dataset id {dataset_id!r}: letters, digits and _.- only, at most 64")
    return dataset_id


def install_dataset(
    source: str | Path,
    directory: str | Path,
    dataset_id: str | None = None,
    caps: Caps = Caps(),
    replace: bool = False,
) -> tuple[str, Loaded]:
    """Validate `source` and write its valid problems to `directory/<dataset_id>.jsonl` atomically.

    The id defaults to the file's stem. Workers reading the directory never see a half-written file.
    """
    dataset_id = check_dataset_id(Path(source).stem if dataset_id is None else dataset_id)
    directory = Path(directory)
    target = directory / f"{dataset_id}.jsonl"
    if target.exists() and not replace:
        raise DatasetError(f"dataset {dataset_id!r} already exists in {directory} (use replace)")
    loaded = load_problems(source, caps)
    if not loaded.problems:
        raise DatasetError(f"{source}: no valid problem")
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=directory, suffix=".tmp", delete=False, encoding="utf-8"
    ) as tmp:
        for problem in loaded.problems:
            tmp.write(problem.model_dump_json(exclude_none=True) + "\n")
    os.replace(tmp.name, target)
    return dataset_id, loaded


def resolve_datasets_dir(setting: str | Path | None) -> Path:
    """The datasets directory: the caller's setting, else DEFAULT_DATASETS_DIR (user expanded)."""
    return Path(setting or DEFAULT_DATASETS_DIR).expanduser()


class DatasetStore:
    """Datasets by id, each a dict of problems by id; what `Context.datasets` holds on a worker.

    Built over a directory (see the module docstring) and/or filled with `add`. Lookups of an unknown
    problem or dataset rescan the directory once for datasets installed since.
    """

    def __init__(self, directory: str | Path | None = None, caps: Caps = Caps()) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.caps = caps
        self._datasets: dict[str, dict[str, Problem]] = {}

    def add(self, dataset_id: str, problems: list[Problem]) -> None:
        """Make `problems` available under `dataset_id` (replacing a dataset of that id)."""
        self._datasets[check_dataset_id(dataset_id)] = {problem.id: problem for problem in problems}

    def ids(self) -> list[str]:
        """The ids of the datasets loaded so far."""
        return sorted(self._datasets)

    def size(self, dataset_id: str) -> int:
        """The number of problems of a loaded dataset."""
        return len(self._datasets[dataset_id])

    def refresh(self) -> list[str]:
        """Load the directory's datasets not loaded yet; return their ids."""
        if self.directory is None or not self.directory.is_dir():
            return []
        new = []
        for path in sorted(self.directory.glob("*.jsonl")):
            if path.stem not in self._datasets and DATASET_ID.fullmatch(path.stem):
                self.add(path.stem, load_problems(path, self.caps).problems)
                new.append(path.stem)
        return new

    def lookup(self, problem_id: str, dataset: str | None = None) -> Problem:
        """The problem `problem_id` (of `dataset` if given); InvalidJob naming the field otherwise."""
        found = self._find(problem_id, dataset)
        if found is None and self.refresh():
            found = self._find(problem_id, dataset)
        if found is None:
            raise InvalidJob(self._not_found(problem_id, dataset))
        return found

    def _find(self, problem_id: str, dataset: str | None) -> Problem | None:
        """The problem if exactly one loaded dataset (or `dataset`) has it; InvalidJob if several do."""
        if dataset is not None:
            return self._datasets.get(dataset, {}).get(problem_id)
        hits = [
            (name, problems[problem_id])
            for name, problems in self._datasets.items()
            if problem_id in problems
        ]
        if len(hits) > 1:
            names = ", ".join(name for name, _ in hits)
            raise InvalidJob(f"problem_id: {problem_id!r} is in several datasets ({names}): set `dataset`")
        return hits[0][1] if hits else None

    def _not_found(self, problem_id: str, dataset: str | None) -> str:
        """The message of a failed lookup."""
        if dataset is not None and dataset not in self._datasets:
            return f"dataset: unknown dataset {dataset!r} (loaded: {', '.join(self.ids()) or 'none'})"
        where = (
            f"dataset {dataset!r}" if dataset else f"the loaded datasets ({', '.join(self.ids()) or 'none'})"
        )
        return f"problem_id: unknown problem {problem_id!r} in {where}"
