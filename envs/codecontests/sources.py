"""Public problem sets -> the JSONL problem format, each with the judge its problems need.

Each reader turns one row of a dataset's own files (parquet, or JSON lines) into one problem object
(`envs.datasets`), filling `checker`, `interactor` and `fn_name` from what the dataset carries, and
keeping up to `max_solutions` of its correct and incorrect solutions (`solutions`,
`incorrect_solutions`: lists of {language, code}) for `evalfarm datasets lint`:

- `openr1-codeforces` (open-r1/codeforces): `examples` are the public tests, `official_tests` the
  hidden ones; `generated_checker` is a checker under open-r1's protocol. A problem with an
  `interaction_format` is interactive and the dataset ships no interactor; one read from files
  (`input_mode` "file") cannot be judged on stdin: both are kept, marked `{"type": "missing"}`, and
  answered `judge_error`, never a reward.
- `codecontests-plus` (ByteDance-Seed/Code-Contests-Plus): `test_cases`, a testlib `checker` in C++,
  `correct_submissions` and `incorrect_submissions`.
- `taco` and `apps` (BAAI/TACO, codeparrot/apps): the `input_output` JSON; with `fn_name` its tests
  call a function (each input a list of arguments; an expected value stored in a one-element list,
  as those datasets store most of them, is unwrapped); `solutions`, a JSON list of Python programs.
- `livecodebench` (livecodebench/code_generation_lite): `public_test_cases` and `private_test_cases`
  (plain JSON, or base64 of zlib of a pickled JSON string, read without running any pickle code);
  functional tests call `metadata.func_name`.

Problems without a checker of their own get `checker` (default `auto`: the statement's tolerance
sentence, "in any case", "any of them").
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import pickle
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evalfarm.envs.datasets import DatasetError

BATCH_ROWS = 64
# A solution's language as the datasets spell it -> the farm's.
LANGUAGES = {
    "python": "python", "python3": "python", "py3": "python", "py": "python", "pypy3": "python",
    "cpp": "cpp", "c++": "cpp", "cpp17": "cpp", "c++17": "cpp", "gnu c++17": "cpp",
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SourceOptions:
    """Caps of a reader: hidden tests and solutions kept per problem, problems written, the checker
    of problems that have none of their own."""

    max_hidden: int = 50
    max_solutions: int = 5
    max_samples: int | None = None
    checker: str = "auto"


def source_files(source: str | Path, suffixes: tuple[str, ...] = (".parquet", ".jsonl")) -> list[Path]:
    """`source` itself if it is a file, else every file below it with one of `suffixes`, sorted."""
    source = Path(source)
    if source.is_file():
        return [source]
    files = sorted(path for path in source.rglob("*") if path.suffix in suffixes) if source.is_dir() else []
    if not files:
        raise DatasetError(f"no {' or '.join(suffix.lstrip('.') for suffix in suffixes)} file at {source}")
    return files


def iter_rows(
    files: list[Path], required: tuple[str, ...], columns: tuple[str, ...] | None = None
) -> Iterator[dict[str, Any]]:
    """The rows of parquet or JSON-lines `files`, in small batches; DatasetError if a file lacks a
    `required` column. `columns`: a parquet file's columns to read (the large ones left on disk)."""
    for path in files:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq  # a tooling dependency: workers never need it

            parquet = pq.ParquetFile(path)
            _require(path, parquet.schema_arrow.names, required)
            wanted = list(columns) if columns is not None else None
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
                yield from batch.to_pylist()
            continue
        with open(path, encoding="utf-8") as file:
            for number, line in enumerate(file, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DatasetError(f"{path}:{number}: not JSON ({error.msg})") from None
                _require(path, list(row), required)
                yield row


def _require(path: Path, names: list[str], required: tuple[str, ...]) -> None:
    missing = [name for name in required if name not in names]
    if missing:
        raise DatasetError(f"{path}: missing columns {', '.join(missing)}: not this dataset's format")


def _solutions(items: Any, limit: int) -> list[dict[str, str]]:
    """Up to `limit` {language, code} in languages the farm runs, from [{code, language}, ...]."""
    kept = []
    for item in items or ():
        if not isinstance(item, dict):
            continue
        language = LANGUAGES.get(str(item.get("language", "")).strip().lower())
        code = item.get("code") or item.get("solution")
        if language and isinstance(code, str) and code.strip():
            kept.append({"language": language, "code": code})
        if len(kept) >= limit:
            break
    return kept


def missing(reason: str) -> dict[str, str]:
    """The checker of a problem the dataset cannot judge: each of its tests is `judge_error`."""
    return {"type": "missing", "reason": reason}


# --- open-r1/codeforces ------------------------------------------------------------------------


def openr1_codeforces(row: dict[str, Any], options: SourceOptions) -> dict[str, Any] | None:
    """A problem of open-r1/codeforces."""
    public = _pairs_of_list(row.get("examples"))
    hidden = _pairs_of_list(row.get("official_tests"))[: options.max_hidden]
    if not hidden or not row.get("id"):
        return None
    sections = [
        row.get("description"),
        _section("Input", row.get("input_format")),
        _section("Output", row.get("output_format")),
        _section("Interaction", row.get("interaction_format")),
        _section("Note", row.get("note")),
    ]
    problem: dict[str, Any] = {
        "id": row["id"],
        "description": "\n\n".join(part for part in sections if part),
        "public_tests": public,
        "hidden_tests": hidden,
        "difficulty": row.get("rating"),
    }
    if row.get("interaction_format"):
        problem["checker"] = missing("an interactive problem: open-r1/codeforces ships no interactor")
    elif (row.get("input_mode") or "stdio") != "stdio":
        problem["checker"] = missing(f"input_mode {row.get('input_mode')!r}: the program reads files")
    elif row.get("generated_checker"):
        checker = {"type": "program", "language": "python", "protocol": "openr1"}
        problem["checker"] = checker | {"code": row["generated_checker"]}
    else:
        problem["checker"] = options.checker
    return problem


def _section(title: str, text: Any) -> str | None:
    return f"{title}\n\n{text}" if text else None


def _pairs_of_list(tests: Any) -> list[dict[str, str]]:
    """[{input, output}, ...] with text on both sides."""
    return [
        {"input": test["input"], "output": test["output"]}
        for test in tests or ()
        if isinstance(test, dict) and all(isinstance(test.get(part), str) for part in ("input", "output"))
    ]


# --- ByteDance-Seed/Code-Contests-Plus -----------------------------------------------------------


def codecontests_plus(row: dict[str, Any], options: SourceOptions) -> dict[str, Any] | None:
    """A problem of Code-Contests-Plus: its tests, its testlib checker, its submissions."""
    tests = _pairs_of_list(row.get("test_cases"))
    if not tests or not row.get("id"):
        return None
    checker: Any = options.checker
    if isinstance(row.get("checker"), str) and row["checker"].strip():
        checker = {"type": "program", "language": "cpp", "protocol": "testlib", "code": row["checker"]}
    return {
        "id": str(row["id"]),
        "description": row.get("description") or "",
        "public_tests": [],
        "hidden_tests": tests[: options.max_hidden],
        "checker": checker,
        "solutions": _solutions(row.get("correct_submissions"), options.max_solutions),
        "incorrect_solutions": _solutions(row.get("incorrect_submissions"), options.max_solutions),
    }


# --- BAAI/TACO and codeparrot/apps ---------------------------------------------------------------


def taco(row: dict[str, Any], options: SourceOptions) -> dict[str, Any] | None:
    """A problem of TACO or APPS (`input_output`, `solutions`: JSON strings)."""
    try:
        tests = json.loads(row.get("input_output") or "{}")
        solutions = json.loads(row.get("solutions") or "[]")
    except json.JSONDecodeError:
        return None
    inputs, outputs = tests.get("inputs") or [], tests.get("outputs") or []
    fn_name = tests.get("fn_name")
    if fn_name:
        pairs = [
            {"input": list(given), "output": _unwrapped(expected)}
            for given, expected in zip(inputs, outputs, strict=False)
            if isinstance(given, list)
        ]
    else:
        pairs = [
            {"input": _text(given), "output": _text(expected)}
            for given, expected in zip(inputs, outputs, strict=False)
        ]
    if not pairs:
        return None
    identifier = row.get("problem_id", row.get("name"))
    description = row.get("question") or ""
    if row.get("starter_code"):
        description += f"\n\nStarter code:\n{row['starter_code']}"
    problem: dict[str, Any] = {
        "id": str(identifier if identifier not in (None, "") else row.get("url")),
        "description": description,
        "public_tests": [],
        "hidden_tests": pairs[: options.max_hidden],
        "difficulty": row.get("difficulty"),
        "solutions": [{"language": "python", "code": code} for code in solutions[: options.max_solutions]],
    }
    if fn_name:
        problem["fn_name"] = fn_name
    else:
        problem["checker"] = options.checker
    return problem


def _unwrapped(expected: Any) -> Any:
    """An expected return value as TACO and APPS store most of them: in a one-element list."""
    return expected[0] if isinstance(expected, list) and len(expected) == 1 else expected


def _text(value: Any) -> str:
    """A stdin test's input or output: a string, or a list of lines."""
    if isinstance(value, list):
        return "\n".join(str(line) for line in value) + "\n"
    return str(value)


# --- livecodebench/code_generation_lite ----------------------------------------------------------


def livecodebench(row: dict[str, Any], options: SourceOptions) -> dict[str, Any] | None:
    """A problem of LiveCodeBench's code generation set."""
    public = _lcb_tests(row.get("public_test_cases"))
    hidden = _lcb_tests(row.get("private_test_cases")) or public
    if not hidden or not row.get("question_id"):
        return None
    metadata = json.loads(row.get("metadata") or "{}")
    functional = hidden[0].get("testtype") == "functional"
    strip = lambda tests: [{"input": t["input"], "output": t["output"]} for t in tests]  # noqa: E731
    problem: dict[str, Any] = {
        "id": str(row["question_id"]),
        "description": (row.get("question_content") or "")
        + (f"\n\nStarter code:\n{row['starter_code']}" if row.get("starter_code") else ""),
        "public_tests": strip(public),
        "hidden_tests": strip(hidden[: options.max_hidden]),
        "difficulty": row.get("difficulty"),
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

Reader = Callable[[dict[str, Any], SourceOptions], "dict[str, Any] | None"]
READERS: dict[str, tuple[Reader, tuple[str, ...]]] = {
    "openr1-codeforces": (openr1_codeforces, ("id", "examples", "official_tests")),
    "codecontests-plus": (codecontests_plus, ("id", "test_cases")),
    "taco": (taco, ("input_output", "solutions")),
    "apps": (taco, ("input_output", "solutions")),
    "livecodebench": (livecodebench, ("question_id", "public_test_cases")),
}


def prepare_source(kind: str, source: str | Path, out: str | Path, options: SourceOptions) -> tuple[int, int]:
    """Write the problems of `source` (a dataset of `kind`) to `out`; (rows read, problems written)."""
    reader, required = READERS[kind]
    rows = iter_rows(source_files(source), required)
    return write_problems(rows, lambda row: reader(row, options), out, options.max_samples)


def write_problems(
    rows: Iterator[dict[str, Any]],
    convert: Callable[[dict[str, Any]], dict[str, Any] | None],
    out: str | Path,
    max_samples: int | None,
) -> tuple[int, int]:
    """The problems `convert` makes of `rows` (None: dropped), one JSON line each in `out`, at most
    `max_samples`; (rows read, problems written)."""
    read = written = 0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as file:
        for row in rows:
            if max_samples is not None and written >= max_samples:
                break
            read += 1
            problem = convert(row)
            if problem is not None:
                file.write(json.dumps(problem, ensure_ascii=False) + "\n")
                written += 1
    return read, written
