"""Datasets that carry their judges: small files in each dataset's own format (open-r1/codeforces,
Code-Contests-Plus, TACO, APPS, LiveCodeBench, deepmind/code_contests' solutions) read by
`evalfarm datasets prepare`, and `evalfarm datasets lint` judging their own solutions in the real
sandbox to find the poisoned problems."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path
from typing import Any

import pytest
from test_judging import CPP_TESTLIB

from evalfarm.envs.codecontests.lint import ProblemLint
from evalfarm.envs.codecontests.sources import SourceOptions, prepare_source
from evalfarm.envs.datasets import DatasetError, Problem
from evalfarm.workers.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TESTS = pa.list_(pa.struct([("input", pa.string()), ("output", pa.string())]))
SUBMISSIONS = pa.list_(pa.struct([("code", pa.string()), ("language", pa.string())]))

# Print the input's numbers in any order: only a checker can judge it.
SHUFFLE_CHECKER = """
import sys
given, correct, output = (open(path).read().split() for path in sys.argv[1:4])
print(1 if sorted(output) == sorted(given[1:]) else 0)
"""
REVERSED = "input()\nprint(*reversed(input().split()))\n"


def write_parquet(path: Path, schema: Any, rows: list[dict[str, Any]]) -> Path:
    full = [{name: row.get(name) for name in schema.names} for row in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=schema), path)
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- open-r1/codeforces ----------------------------------------------------------------------------

OPENR1_SCHEMA = pa.schema(
    [
        ("id", pa.string()), ("aliases", pa.list_(pa.string())), ("contest_id", pa.string()),
        ("contest_name", pa.string()), ("contest_type", pa.string()), ("contest_start", pa.int64()),
        ("contest_start_year", pa.int64()), ("index", pa.string()), ("time_limit", pa.float64()),
        ("memory_limit", pa.float64()), ("title", pa.string()), ("description", pa.string()),
        ("input_format", pa.string()), ("output_format", pa.string()), ("interaction_format", pa.string()),
        ("note", pa.string()), ("examples", TESTS), ("editorial", pa.string()), ("rating", pa.int64()),
        ("tags", pa.list_(pa.string())), ("testset_size", pa.int64()), ("official_tests", TESTS),
        ("official_tests_complete", pa.bool_()), ("input_mode", pa.string()),
        ("generated_checker", pa.string()), ("executable", pa.bool_()), ("generated_tests", pa.int64()),
    ]
)  # fmt: skip


def openr1_row(problem_id: str, **fields: Any) -> dict[str, Any]:
    tests = [{"input": "3\n1 2 3\n", "output": "1 2 3\n"}, {"input": "2\n5 4\n", "output": "5 4\n"}]
    return {
        "id": problem_id, "title": problem_id, "description": "Print the numbers in any order.",
        "input_format": "n, then n numbers", "output_format": "The numbers.", "examples": tests[:1],
        "official_tests": tests, "official_tests_complete": True, "input_mode": "stdio",
        "rating": 800, "time_limit": 1.0, "memory_limit": 256.0, "executable": True,
    } | fields  # fmt: skip


@pytest.fixture
def openr1(tmp_path: Path) -> Path:
    rows = [
        openr1_row("1/A", generated_checker=SHUFFLE_CHECKER),
        openr1_row("2/B", description="Print the numbers. If there are several answers, print any of them."),
        openr1_row("3/C", interaction_format="Ask queries of the form '? x'."),
        openr1_row("4/D", input_mode="file"),
        openr1_row("5/E", description="Print the numbers as given."),
    ]
    directory = tmp_path / "codeforces" / "data"
    directory.mkdir(parents=True)
    return write_parquet(directory / "train-00000-of-00001.parquet", OPENR1_SCHEMA, rows)


def test_openr1_codeforces_problems_carry_their_checker_or_say_what_they_lack(
    openr1: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cf.jsonl"
    assert prepare_source("openr1-codeforces", openr1.parent.parent, out, SourceOptions()) == (5, 5)
    problems = {problem["id"]: problem for problem in read_jsonl(out)}
    assert problems["1/A"]["checker"] == {
        "type": "program", "language": "python", "protocol": "openr1", "code": SHUFFLE_CHECKER,
    }  # fmt: skip
    assert problems["1/A"]["public_tests"] == [{"input": "3\n1 2 3\n", "output": "1 2 3\n"}]
    assert len(problems["1/A"]["hidden_tests"]) == 2
    assert "Input\n\nn, then n numbers" in problems["1/A"]["description"]
    assert problems["2/B"]["checker"] == "auto"  # the statement decides: any of them -> judge_error
    assert (
        problems["3/C"]["checker"]["type"] == "missing"
        and "interactive" in problems["3/C"]["checker"]["reason"]
    )
    assert problems["4/D"]["checker"]["type"] == "missing" and "file" in problems["4/D"]["checker"]["reason"]
    for problem in problems.values():
        Problem.model_validate(problem)  # what the farm will load


# --- ByteDance-Seed/Code-Contests-Plus -------------------------------------------------------------

CCPLUS_SCHEMA = pa.schema(
    [
        ("id", pa.string()), ("source", pa.string()), ("title", pa.string()), ("description", pa.string()),
        ("time_limit", pa.int64()), ("memory_limit", pa.int64()), ("validator", pa.string()),
        ("generator", pa.string()), ("generator_cmd", pa.string()), ("checker", pa.string()),
        ("correct_submissions", SUBMISSIONS), ("incorrect_submissions", SUBMISSIONS), ("test_cases", TESTS),
    ]
)  # fmt: skip
TESTLIB_SHUFFLE = CPP_TESTLIB  # a permutation of the input, as test_judging.py checks it


@pytest.fixture
def ccplus(tmp_path: Path) -> Path:
    tests = [{"input": "3\n1 2 3\n", "output": "1 2 3\n"}, {"input": "2\n5 4\n", "output": "5 4\n"}]
    row = {
        "id": "1575A", "source": "codeforces", "title": "Shuffle", "description": "Any order.",
        "time_limit": 1000, "memory_limit": 256, "checker": TESTLIB_SHUFFLE, "test_cases": tests,
        "correct_submissions": [
            {"code": REVERSED, "language": "py3"},
            {"code": "class Main {}", "language": "java"},  # not run by the farm: dropped
        ],
        "incorrect_submissions": [{"code": "input()\nprint(1)\n", "language": "py3"}],
    }  # fmt: skip
    return write_parquet(tmp_path / "part-00000-of-00010.parquet", CCPLUS_SCHEMA, [row])


def test_codecontests_plus_problems_keep_their_testlib_checker_and_submissions(
    ccplus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ccplus.jsonl"
    prepare_source("codecontests-plus", ccplus, out, SourceOptions())
    (problem,) = read_jsonl(out)
    assert problem["checker"] == {
        "type": "program",
        "language": "cpp",
        "protocol": "testlib",
        "code": TESTLIB_SHUFFLE,
    }
    assert problem["solutions"] == [{"language": "python", "code": REVERSED}]
    assert problem["incorrect_solutions"] == [{"language": "python", "code": "input()\nprint(1)\n"}]


# --- BAAI/TACO and codeparrot/apps -----------------------------------------------------------------

TACO_COLUMNS = (
    "question", "solutions", "starter_code", "input_output", "difficulty", "raw_tags", "name", "source",
    "tags", "skill_types", "url", "Expected Auxiliary Space", "time_limit", "date", "picture_num",
    "memory_limit", "Expected Time Complexity",
)  # fmt: skip


PAIR_SUM = "def pair_sum(a, b):\n    return a + [b] if isinstance(a, list) else a + b\n"


@pytest.fixture
def taco(tmp_path: Path) -> Path:
    call = {"fn_name": "pair_sum", "inputs": [[1, 2], [[3], 4]], "outputs": [[3], [[3, 4]]]}
    stdin = {"inputs": ["1 2\n", ["3", "4"]], "outputs": [["3"], "7\n"]}
    rows = [
        {
            "question": "Return a + b, or the list with b appended when a is a list.", "name": "pair",
            "starter_code": "def pair_sum(a, b):\n", "input_output": json.dumps(call), "difficulty": "EASY",
            "solutions": json.dumps([PAIR_SUM]),
        },
        {
            "question": "Print the sum of the numbers.", "name": "sum", "starter_code": "",
            "input_output": json.dumps(stdin), "difficulty": "EASY",
            "solutions": json.dumps(["import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"]),
        },
    ]  # fmt: skip
    schema = pa.schema([(name, pa.string()) for name in TACO_COLUMNS])
    directory = tmp_path / "TACO" / "ALL"
    directory.mkdir(parents=True)
    return write_parquet(directory / "train-00000-of-00009.parquet", schema, rows)


def test_taco_call_tests_unwrap_their_expected_values_and_stdin_tests_join_their_lines(
    taco: Path, tmp_path: Path
) -> None:
    out = tmp_path / "taco.jsonl"
    prepare_source("taco", taco.parent, out, SourceOptions())
    call, stdin = read_jsonl(out)
    assert call["fn_name"] == "pair_sum" and "checker" not in call
    assert call["hidden_tests"] == [{"input": [1, 2], "output": 3}, {"input": [[3], 4], "output": [3, 4]}]
    assert stdin["checker"] == "auto"
    assert stdin["hidden_tests"] == [
        {"input": "1 2\n", "output": "3\n"},
        {"input": "3\n4\n", "output": "7\n"},
    ]
    assert stdin["solutions"][0]["language"] == "python"


def test_apps_lines_read_as_taco(tmp_path: Path) -> None:
    row = {
        "problem_id": 4012, "question": "Sum.", "starter_code": "", "difficulty": "introductory",
        "url": "https://codeforces.com/problemset/problem/1/A",
        "input_output": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),
        "solutions": json.dumps(["print(sum(map(int, input().split())))\n"]),
    }  # fmt: skip
    source = tmp_path / "test.jsonl"
    source.write_text(json.dumps(row) + "\n")
    prepare_source("apps", source, tmp_path / "apps.jsonl", SourceOptions())
    (problem,) = read_jsonl(tmp_path / "apps.jsonl")
    assert problem["id"] == "4012" and problem["hidden_tests"] == [{"input": "1 2\n", "output": "3\n"}]


# --- livecodebench/code_generation_lite ------------------------------------------------------------


def lcb_private(tests: list[dict[str, str]]) -> str:
    """LiveCodeBench's encoding of private tests: base64 of zlib of a pickled JSON string."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


@pytest.fixture
def lcb(tmp_path: Path) -> Path:
    functional = {
        "question_title": "Two Sum Count", "question_content": "Count pairs summing to target.",
        "platform": "leetcode", "question_id": "3000", "contest_id": "weekly-1",
        "contest_date": "2024-01-01T00:00:00", "difficulty": "easy",
        "starter_code": "class Solution:\n    def countPairs(self, nums: List[int], target: int) -> int:\n",
        "public_test_cases": json.dumps([{"input": "[1, 2, 3]\n4", "output": "1", "testtype": "functional"}]),
        "private_test_cases": lcb_private(
            [{"input": "[1, 1, 1]\n2", "output": "3", "testtype": "functional"},
             {"input": "[]\n0", "output": "0", "testtype": "functional"}]
        ),
        "metadata": json.dumps({"func_name": "countPairs"}),
    }  # fmt: skip
    stdin = {
        "question_title": "A+B", "question_content": "Print a+b.", "platform": "atcoder",
        "question_id": "abc300_a", "contest_id": "abc300", "contest_date": "2024-01-01T00:00:00",
        "difficulty": "easy", "starter_code": "",
        "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
        "private_test_cases": json.dumps([{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]),
        "metadata": "{}",
    }  # fmt: skip
    source = tmp_path / "test.jsonl"
    source.write_text(json.dumps(functional) + "\n" + json.dumps(stdin) + "\n")
    return source


def test_livecodebench_private_tests_are_decoded_and_functional_ones_call_the_function(
    lcb: Path, tmp_path: Path
) -> None:
    out = tmp_path / "lcb.jsonl"
    prepare_source("livecodebench", lcb, out, SourceOptions())
    functional, stdin = read_jsonl(out)
    assert functional["fn_name"] == "countPairs"
    assert functional["hidden_tests"] == [
        {"input": "[1, 1, 1]\n2", "output": 3},
        {"input": "[]\n0", "output": 0},
    ]
    assert functional["public_tests"] == [{"input": "[1, 2, 3]\n4", "output": 1}]
    assert stdin["hidden_tests"] == [{"input": "5 5\n", "output": "10\n"}] and stdin["checker"] == "auto"


def test_a_pickle_that_would_run_code_is_refused(tmp_path: Path) -> None:
    class Boom:
        def __reduce__(self) -> tuple[Any, ...]:
            return (print, ("ran",))

    row = {"question_id": "x", "public_test_cases": "[]", "metadata": "{}",
           "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps(Boom()))).decode()}  # fmt: skip
    source = tmp_path / "test.jsonl"
    source.write_text(json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match="only plain data"):
        prepare_source("livecodebench", source, tmp_path / "o.jsonl", SourceOptions())


def test_a_file_of_another_dataset_is_refused_naming_what_it_lacks(ccplus: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="missing columns examples, official_tests"):
        prepare_source("openr1-codeforces", ccplus, tmp_path / "o.jsonl", SourceOptions())


# --- lint: the datasets' own solutions through the farm's sandbox ----------------------------------


@pytest.mark.sandbox
@pytest.mark.slow
def test_lint_finds_the_problems_that_reject_correct_or_accept_wrong_solutions(
    openr1: Path, ccplus: Path, taco: Path, lcb: Path, tmp_path: Path, capsys: Any
) -> None:
    files = []
    for kind, source in (("openr1-codeforces", openr1), ("codecontests-plus", ccplus), ("taco", taco),
                         ("livecodebench", lcb)):  # fmt: skip
        files.append(tmp_path / f"{kind}.jsonl")
        assert main(["datasets", "prepare", kind, "--source", str(source), "--out", str(files[-1])]) == 0
    problems = [problem for path in files for problem in read_jsonl(path)]
    solutions = {
        "1/A": [REVERSED], "2/B": [REVERSED], "3/C": [REVERSED], "5/E": [REVERSED],
        "3000": ["class Solution:\n    def countPairs(self, nums, target):\n"
                 "        return sum(nums[i] + nums[j] == target for i in range(len(nums))"
                 " for j in range(i + 1, len(nums)))\n"],
        "abc300_a": ["print(sum(map(int, input().split())))\n"],
    }  # fmt: skip
    wrong = {"1/A": ["input()\nprint(7, 7, 7)\n"], "abc300_a": ["print(10)\n"]}  # 10 is one test's answer
    for problem in problems:
        if problem["id"] in solutions:
            problem["solutions"] = [{"language": "python", "code": code} for code in solutions[problem["id"]]]
        if problem["id"] in wrong:
            problem["incorrect_solutions"] = [
                {"language": "python", "code": code} for code in wrong[problem["id"]]
            ]
    dataset = tmp_path / "all.jsonl"
    dataset.write_text("".join(json.dumps(problem) + "\n" for problem in problems))
    report = tmp_path / "report.jsonl"
    assert main(["datasets", "lint", str(dataset), "--workers", "1", "--report", str(report)]) == 0
    findings = {line["id"]: line["finding"] for line in read_jsonl(report)}
    assert findings == {
        "1/A": "clean",  # the checker accepts the reversed numbers and refuses 7 7 7
        "2/B": "unjudgeable",  # "any of them", and no checker
        "3/C": "unjudgeable",  # interactive, no interactor
        "5/E": "rejects_correct",  # a reference answer in order: the reversed numbers fail
        "1575A": "clean",  # testlib checker in C++
        "pair": "clean",
        "sum": "clean",
        "3000": "clean",
        "abc300_a": "accepts_wrong",  # its only hidden test's answer is 10
    }
    out = capsys.readouterr()
    assert "rejects_correct\t5/E" in out.out and "accepts_wrong\tabc300_a" in out.out
    assert "linted 9 problems" in out.err
    assert ProblemLint("p", ["ok"], ["infra_error"]).finding == "clean"  # a farm fault is not the problem's


def test_code_contests_solutions_are_kept_when_asked_in_languages_the_farm_runs(tmp_path: Path) -> None:
    from test_datasets import cc_row, code_contests_parquet

    row = cc_row("1/A", 1, 1, 0, 7) | {
        "solutions": {"language": [1, 2, 3, 4], "solution": ["py2", "cpp", "py3", "java"]},
        "incorrect_solutions": {"language": [3], "solution": ["wrong"]},
    }
    source = code_contests_parquet(tmp_path / "test-00000-of-00001.parquet", [row])
    out = tmp_path / "cc.jsonl"
    assert main(["datasets", "prepare", "codecontests", "--source", str(source), "--out", str(out)]) == 0
    assert "solutions" not in read_jsonl(out)[0] and "checker" not in read_jsonl(out)[0]  # the seed's format
    argv = ["datasets", "prepare", "codecontests", "--source", str(source), "--out", str(out)]
    assert main([*argv, "--solutions", "5", "--checker", "auto"]) == 0
    (problem,) = read_jsonl(out)
    assert problem["solutions"] == [{"language": "cpp", "code": "cpp"}, {"language": "python", "code": "py3"}]
    assert problem["incorrect_solutions"] == [{"language": "python", "code": "wrong"}]
    assert problem["checker"] == "auto"
