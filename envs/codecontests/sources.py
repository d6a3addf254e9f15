"""Public problem sets -> the JSONL problem format, each with the judge and the limits it needs.

Each reader turns one row of a dataset's own files (parquet, JSON lines, Arrow IPC: `rows.py`) into
one problem object (`envs.datasets`), filling `checker`, `interactor`, `fn_name`, `files` and
`limits` from what the dataset carries, and keeping up to `max_solutions` of its correct and
incorrect solutions (`solutions`, `incorrect_solutions`: lists of {language, code}) for
`evalfarm datasets lint`. Limits are converted from each dataset's units (`problem_limits.py`) and
every time limit multiplied by `time_scale`:

- `openr1-codeforces` (open-r1/codeforces): see `openr1.py` (official and generated tests, `\\r`,
  file input, the verifiable subset); `time_limit` seconds, `memory_limit` MB (floats).
- `codecontests-plus` (ByteDance-Seed/Code-Contests-Plus): `test_cases`, a testlib `checker` in C++,
  `correct_submissions` and `incorrect_submissions` (Python, C++, Java); `time_limit` milliseconds,
  `memory_limit` MB (integers).
- `taco` and `apps` (BAAI/TACO, codeparrot/apps): the `input_output` JSON; with `fn_name` its tests
  call a function (each input a list of arguments; an expected value stored in a one-element list,
  as those datasets store most of them, is unwrapped); `solutions`, a JSON list of Python programs.
  TACO's `time_limit` and `memory_limit` are text (`"1 second"`, `"256 megabytes"`) or null. A TACO
  row's id is its split and its rank in it (`test/17`), as TACO's evaluation and its special-judge
  list (`output_spj.jsonl`, FlagOpen/TACO: `idx`, `special_judge`, `case`: 1 outputs that are not
  unique, 2 letter case ignored, 3 reals within a tolerance) number the test split's problems.
- `livecodebench` (livecodebench/code_generation_lite): `public_test_cases` and `private_test_cases`
  (plain JSON, or base64 of zlib of a pickled JSON string, read without running any pickle code);
  the reward is over both, as LiveCodeBench's own evaluation grades (`get_evaluation_sample`);
  functional tests call `metadata.func_name`. It gives no limits.

Problems without a checker of their own get `checker` (default `auto`: the statement's tolerance
sentence, "in any case", "any of them").
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import pickle
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evalfarm.envs.codecontests import openr1
from evalfarm.envs.codecontests.problem_limits import problem_limits
from evalfarm.envs.codecontests.problem_parts import Skipped, missing, pairs_of_list, solutions
from evalfarm.envs.codecontests.rows import Row, iter_rows, source_files
from evalfarm.envs.datasets import MAX_PROBLEM_CHARS, MAX_TEST_CHARS, DatasetError

SPECIAL_JUDGE_FILE = "output_spj.jsonl"  # TACO's special-judge list, as FlagOpen/TACO names it
# TACO's own evaluation compares reals with numpy.allclose (relative 1e-5): metrics/testing_util.py.
TACO_FLOAT = "float:1e-05"


@dataclasses.dataclass(frozen=True)
class SourceOptions:
    """Caps of a reader: hidden tests and solutions kept per problem, problems written, the checker
    of problems that have none of their own; the factor on every time limit; TACO's special-judge
    list (default: `output_spj.jsonl` in the source folder, where there is one)."""

    max_hidden: int = 50
    max_solutions: int = 5
    max_samples: int | None = None
    checker: str = "auto"
    time_scale: float = 1.0
    special_judge: str | None = None


@dataclasses.dataclass
class Prepared:
    """What `prepare` did: rows read, problems written, the rows skipped by reason, and the hidden
    tests left out of written problems for the farm's size caps."""

    read: int = 0
    written: int = 0
    skipped: Counter[str] = dataclasses.field(default_factory=Counter)
    tests_left_out: int = 0


# --- ByteDance-Seed/Code-Contests-Plus -----------------------------------------------------------


def codecontests_plus(row: Row, options: SourceOptions) -> dict[str, Any]:
    """A problem of Code-Contests-Plus: its tests, its testlib checker, its submissions."""
    values = row.values
    tests = pairs_of_list(values.get("test_cases"))
    if not tests or not values.get("id"):
        raise Skipped("no id or no test")
    checker: Any = options.checker
    if isinstance(values.get("checker"), str) and values["checker"].strip():
        checker = {"type": "program", "language": "cpp", "protocol": "testlib", "code": values["checker"]}
    problem = {
        "id": str(values["id"]),
        "description": values.get("description") or "",
        "public_tests": [],
        "hidden_tests": tests[: options.max_hidden],
        "checker": checker,
        "solutions": solutions(values.get("correct_submissions"), options.max_solutions),
        "incorrect_solutions": solutions(values.get("incorrect_submissions"), options.max_solutions),
    }
    time_ms, memory_mb = values.get("time_limit"), values.get("memory_limit")
    limits = problem_limits(time_ms / 1000 if time_ms else None, memory_mb, options.time_scale)
    return problem | ({"limits": limits} if limits else {})


# --- BAAI/TACO and codeparrot/apps ---------------------------------------------------------------


def taco_reader(source: Path, options: SourceOptions) -> Callable[[Row], dict[str, Any]]:
    """The reader of TACO or APPS rows, with TACO's special-judge list where there is one."""
    listed = Path(options.special_judge) if options.special_judge else Path(source) / SPECIAL_JUDGE_FILE
    special = _special_judges(listed) if options.special_judge or listed.is_file() else {}
    return lambda row: taco(row, options, special)


def _special_judges(path: Path) -> dict[int, int | None]:
    """TACO's special-judge list: test-split rank -> its case (None: it needs none)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines if line.strip()]
        return {int(e["idx"]): (int(e.get("case") or 0) if e["special_judge"] else None) for e in entries}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DatasetError(f"{path}: not TACO's special-judge list ({error})") from None


def taco(row: Row, options: SourceOptions, special: dict[int, int | None] | None = None) -> dict[str, Any]:
    """A problem of TACO or APPS (`input_output`, `solutions`: JSON strings)."""
    values = row.values
    try:
        tests = json.loads(values.get("input_output") or "{}")
        programs = json.loads(values.get("solutions") or "[]")
    except json.JSONDecodeError:
        raise Skipped("input_output or solutions is not JSON") from None
    fn_name = tests.get("fn_name")
    pairs = _taco_tests(tests, fn_name)
    if not pairs:
        raise Skipped("no test")
    identifier = values.get("problem_id")  # APPS; a TACO row has none
    description = values.get("question") or ""
    if values.get("starter_code"):
        description += f"\n\nStarter code:\n{values['starter_code']}"
    problem: dict[str, Any] = {
        "id": str(identifier) if identifier not in (None, "") else f"{row.split}/{row.index}",
        "description": description,
        "public_tests": [],
        "hidden_tests": pairs[: options.max_hidden],
        "difficulty": values.get("difficulty"),
        "solutions": [{"language": "python", "code": code} for code in programs[: options.max_solutions]],
    }
    limits = problem_limits(
        _seconds(values.get("time_limit")), _megabytes(values.get("memory_limit")), options.time_scale
    )
    if limits:
        problem["limits"] = limits
    if fn_name:
        problem["fn_name"] = fn_name
    else:
        problem["checker"] = _taco_checker(row, options, special or {})
    return problem


def _taco_tests(tests: dict[str, Any], fn_name: Any) -> list[dict[str, Any]]:
    inputs, outputs = tests.get("inputs") or [], tests.get("outputs") or []
    if fn_name:
        return [
            {"input": list(given), "output": _unwrapped(expected)}
            for given, expected in zip(inputs, outputs, strict=False)
            if isinstance(given, list)
        ]
    pairs = zip(inputs, outputs, strict=False)
    return [{"input": _text(given), "output": _text(expected)} for given, expected in pairs]


def _taco_checker(row: Row, options: SourceOptions, special: dict[int, int | None]) -> Any:
    """A stdin problem's checker: as TACO's special-judge list says for its test split, else the
    default."""
    if row.split != "test" or row.index not in special or special[row.index] is None:
        return options.checker
    case = special[row.index]
    if case == 2:
        return {"type": "tokens", "case_insensitive": True}
    if case == 3:
        return TACO_FLOAT
    if case == 1:
        return missing("TACO's special-judge list: answers are not unique, and TACO ships no checker")
    return missing(f"TACO's special-judge list: a special judge of case {case}, which it does not describe")


def _unwrapped(expected: Any) -> Any:
    """An expected return value as TACO and APPS store most of them: in a one-element list."""
    return expected[0] if isinstance(expected, list) and len(expected) == 1 else expected


def _text(value: Any) -> str:
    """A stdin test's input or output: a string, or a list of lines."""
    if isinstance(value, list):
        return "\n".join(str(line) for line in value) + "\n"
    return str(value)


_AMOUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$", re.IGNORECASE)
_SECONDS = {"": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
            "ms": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3}  # fmt: skip
_MEGABYTES = {"": 1.0, "mb": 1.0, "megabyte": 1.0, "megabytes": 1.0, "mib": 1.0,
              "kb": 1 / 1024, "kilobyte": 1 / 1024, "kilobytes": 1 / 1024,
              "gb": 1024.0, "gigabyte": 1024.0, "gigabytes": 1024.0}  # fmt: skip


def _seconds(text: Any) -> float | None:
    """TACO's time limit (`"1 second"`, `"2.5 seconds"`) in seconds; None where it gives none."""
    return _amount(text, _SECONDS)


def _megabytes(text: Any) -> float | None:
    """TACO's memory limit (`"256 megabytes"`) in MB; None where it gives none."""
    return _amount(text, _MEGABYTES)


def _amount(text: Any, units: dict[str, float]) -> float | None:
    found = _AMOUNT.match(str(text)) if isinstance(text, str) else None
    if found is None or found.group(2).lower() not in units:
        return None
    return float(found.group(1)) * units[found.group(2).lower()]


# --- livecodebench/code_generation_lite ----------------------------------------------------------


def livecodebench(row: Row, options: SourceOptions) -> dict[str, Any]:
    """A problem of LiveCodeBench's code generation set: the reward over its public and private
    tests, as LiveCodeBench grades."""
    values = row.values
    public = _lcb_tests(values.get("public_test_cases"))
    hidden = public + _lcb_tests(values.get("private_test_cases"))
    if not hidden or not values.get("question_id"):
        raise Skipped("no question_id or no test")
    metadata = json.loads(values.get("metadata") or "{}")
    functional = hidden[0].get("testtype") == "functional"
    strip = lambda tests: [{"input": t["input"], "output": t["output"]} for t in tests]  # noqa: E731
    problem: dict[str, Any] = {
        "id": str(values["question_id"]),
        "description": (values.get("question_content") or "")
        + (f"\n\nStarter code:\n{values['starter_code']}" if values.get("starter_code") else ""),
        "public_tests": strip(public),
        "hidden_tests": strip(hidden[: options.max_hidden]),
        "difficulty": values.get("difficulty"),
    }
    if functional:
        problem["fn_name"] = metadata.get("func_name")
        for test in (*problem["public_tests"], *problem["hidden_tests"]):
            test["output"] = json.loads(test["output"])
    else:
        problem["checker"] = options.checker
    return problem


def _lcb_tests(stored: Any) -> list[dict[str, Any]]:
    """LiveCodeBench's test list: JSON, or base64(zlib(pickle(JSON string)))."""
    if not stored:
        return []
    try:
        return list(json.loads(stored))
    except json.JSONDecodeError:
        pass
    packed = zlib.decompress(base64.b64decode(stored.encode("utf-8")))
    return list(json.loads(_DataOnlyUnpickler(io.BytesIO(packed)).load()))


class _DataOnlyUnpickler(pickle.Unpickler):
    """Reads pickled strings, numbers and containers; refuses any class or function (a pickle that
    names one would run code)."""

    def find_class(self, module: str, name: str) -> Any:
        raise DatasetError(f"the pickled tests name {module}.{name}: only plain data is read")


# --- the readers by name -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Kind:
    """One dataset's reader: made once for a source (`make`), the columns a file of it must have,
    the folders and files beside its rows that hold no problems (generated tests, a judge list)."""

    make: Callable[[Path, SourceOptions], Callable[[Row], dict[str, Any]]]
    required: tuple[str, ...]
    skip: tuple[str, ...] = ()


def _plain(convert: Callable[[Row, SourceOptions], dict[str, Any]]) -> Any:
    return lambda source, options: lambda row: convert(row, options)


READERS: dict[str, Kind] = {
    "openr1-codeforces": Kind(openr1.reader, ("id", "examples", "official_tests"), (openr1.GENERATED,)),
    "codecontests-plus": Kind(_plain(codecontests_plus), ("id", "test_cases")),
    "taco": Kind(taco_reader, ("input_output", "solutions"), (SPECIAL_JUDGE_FILE,)),
    "apps": Kind(taco_reader, ("input_output", "solutions"), (SPECIAL_JUDGE_FILE,)),
    "livecodebench": Kind(_plain(livecodebench), ("question_id", "public_test_cases")),
}


def prepare_source(kind: str, source: str | Path, out: str | Path, options: SourceOptions) -> Prepared:
    """Write the problems of `source` (a dataset of `kind`) to `out`."""
    reader = READERS[kind]
    convert = reader.make(Path(source), options)
    rows = iter_rows(source_files(source, skip=reader.skip), reader.required)
    return write_problems(rows, convert, out, options.max_samples)


def write_problems(
    rows: Iterator[Row],
    convert: Callable[[Row], dict[str, Any]],
    out: str | Path,
    max_samples: int | None,
) -> Prepared:
    """The problems `convert` makes of `rows` (Skipped: counted by reason), one JSON line each in
    `out`, at most `max_samples`, each id once (a later row of an id already written is skipped),
    tests beyond the farm's caps of a problem left out."""
    done = Prepared()
    seen: set[str] = set()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as file:
        for row in rows:
            if max_samples is not None and done.written >= max_samples:
                break
            done.read += 1
            try:
                problem = convert(row)
                if problem["id"] in seen:
                    raise Skipped("an id already written (another config or split of the dataset)")
                done.tests_left_out += _within_caps(problem)
            except Skipped as why:
                done.skipped[str(why)] += 1
                continue
            seen.add(problem["id"])
            file.write(json.dumps(problem, ensure_ascii=False) + "\n")
            done.written += 1
    return done


def _within_caps(problem: dict[str, Any]) -> int:
    """Leave out the hidden tests past the caps of one problem (a test's size, all tests' size),
    since the farm refuses a problem past them; how many. Skipped when no hidden test is left."""
    weigh = lambda value: len(value) if isinstance(value, str) else len(json.dumps(value))  # noqa: E731
    total = sum(weigh(test["input"]) + weigh(test["output"]) for test in problem.get("public_tests", []))
    kept = []
    for test in problem["hidden_tests"]:
        sizes = weigh(test["input"]), weigh(test["output"])
        if max(sizes) > MAX_TEST_CHARS or total + sum(sizes) > MAX_PROBLEM_CHARS:
            continue
        size = sum(sizes)
        total += size
        kept.append(test)
    if not kept:
        raise Skipped("every hidden test is past the farm's size caps")
    left_out = len(problem["hidden_tests"]) - len(kept)
    problem["hidden_tests"] = kept
    return left_out
