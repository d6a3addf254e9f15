"""`evalfarm datasets prepare`, then `evalfarm datasets lint --inline`, on each of the six datasets'
layouts (tests/dataset_layouts.py): a correct and a wrong solution of every problem (Python, C++ and
Java where the dataset has them), judged in the real sandbox, come out as the dataset's own judge
says (open-r1's runner, Code-Contests-Plus' testlib checker, TACO's special-judge list,
LiveCodeBench's public and private tests, code_contests' files), under each problem's own limits.

The datasets' limits are scaled 2x here (`--time-scale 2`): this machine is shared, and a program
that is too slow is still many times over its limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dataset_layouts import (
    FILE_SUM_CPP,
    LENGTH_BYTES,
    LENGTH_CPP,
    REVERSED,
    REVERSED_CPP,
    SUM,
    SUM_OF_THREE,
    apps_dataset,
    burning,
    ccplus_dataset,
    code_contests_dataset,
    lcb_dataset,
    openr1_dataset,
    read_jsonl,
    taco_save_to_disk,
)

from evalfarm.workers.cli import main

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

FILE_SAME = "n, *a = open('input.txt').read().split()\nopen('output.txt', 'w').write(' '.join(a) + '\\n')\n"
FILE_SAME_CPP = r"""
#include <cstdio>
int main() {
    freopen("input.txt", "r", stdin);
    freopen("output.txt", "w", stdout);
    int n, x;
    scanf("%d", &n);
    for (int i = 0; i < n; i++) { scanf("%d", &x); printf("%d ", x); }
    puts("");
}
"""
SAME = "input()\nprint(input())\n"
SEVENS = "input()\nprint(7, 7, 7)\n"
LENGTH_PLUS_ONE = "print(len(input()) + 1)\n"
HOG = "block = bytearray(200 << 20)\n" + SUM
COUNT_PAIRS = """
class Solution:
    def countPairs(self, nums, target):
        return sum(nums[i] + nums[j] == target for i in range(len(nums)) for j in range(i + 1, len(nums)))
"""
THREE_PAIRS = "class Solution:\n    def countPairs(self, nums, target):\n        return 3\n"
ADD_STDIN = "print(sum(map(int, input().split())))\n"


def lint(kind: str, source: Path, tmp_path: Path, add: dict[str, dict[str, list[Any]]] | None = None,
         *prepare: str) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Prepare `source`, add solutions to its problems (`add`: id -> {"solutions": [...],
    "incorrect_solutions": [...]}, each a code or (language, code)), lint it; each problem's line."""
    out = tmp_path / f"{kind}.jsonl"
    argv = ["datasets", "prepare", kind, "--source", str(source), "--out", str(out), "--time-scale", "2"]
    assert main([*argv, *prepare]) == 0
    problems = read_jsonl(out)
    for problem in problems:
        for key, codes in (add or {}).get(problem["id"], {}).items():
            problem[key] = [
                {"language": code[0], "code": code[1]}
                if isinstance(code, tuple)
                else {"language": "python", "code": code}
                for code in codes
            ]
    out.write_text("".join(json.dumps(problem) + "\n" for problem in problems))
    report = tmp_path / f"{kind}.report.jsonl"
    assert main(["datasets", "lint", str(out), "--inline", "--workers", "1", "--report", str(report)]) == 0
    return {line["id"]: line for line in read_jsonl(report)}


def findings(report: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {problem_id: line["finding"] for problem_id, line in report.items()}


def test_openr1_codeforces_as_open_r1_judges_it(tmp_path: Path) -> None:
    # The dataset carries no solutions: each problem gets a correct and a wrong one here.
    add = {
        "1/A": {"solutions": [REVERSED, ("cpp", REVERSED_CPP)], "incorrect_solutions": [SEVENS]},
        "1/B": {"solutions": [SAME]},
        "2/A": {"solutions": [SAME]},
        "2/B": {"solutions": [FILE_SAME, ("cpp", FILE_SAME_CPP)], "incorrect_solutions": [SAME]},
        "1/C": {"solutions": [SUM], "incorrect_solutions": [SUM_OF_THREE]},
        "1/D": {"solutions": [LENGTH_BYTES, ("cpp", LENGTH_CPP)], "incorrect_solutions": [LENGTH_PLUS_ONE]},
        "4/A": {"solutions": [SUM], "incorrect_solutions": [burning(4.0, SUM), HOG]},
    }
    report = lint("openr1-codeforces", openr1_dataset(tmp_path / "codeforces"), tmp_path, add)
    assert findings(report) == {
        "1/A": "clean",  # its generated checker accepts any order and refuses 7 7 7
        "1/B": "unjudgeable",  # "any of them" and no checker: no reference answer can judge it
        "2/A": "unjudgeable",  # interactive: the dataset ships no interactor
        "2/B": "clean",  # input.txt / output.txt in both languages; reading stdin finds nothing
        "1/C": "clean",  # the generated tests catch what the one official test let through
        "1/D": "clean",  # no \r reaches the program nor the checker, as open-r1's runner strips it
        "4/A": "clean",  # 0.5 s (scaled: 1 s) and 64 MB: too slow, too big
    }
    assert report["1/C"]["incorrect"] == ["wrong_answer"]
    assert report["2/B"]["incorrect"] == ["runtime_error"]
    assert report["4/A"]["incorrect"] == ["timeout", "memory_limit"]


def test_code_contests_plus_with_its_checker_limits_and_submissions(tmp_path: Path) -> None:
    report = lint("codecontests-plus", ccplus_dataset(tmp_path), tmp_path)
    assert findings(report) == {"1575A": "clean"}
    assert report["1575A"]["correct"] == ["ok", "ok", "ok"]  # Python, C++, Java
    assert report["1575A"]["incorrect"] == ["wrong_answer", "timeout"]  # wrong; 2.5 s over 1000 ms (2 s)


def test_taco_from_its_arrow_files_with_its_special_judge_list(tmp_path: Path) -> None:
    add = {
        "test/0": {"incorrect_solutions": ["input()\nprint('YES')\n"]},
        "train/1": {"incorrect_solutions": ["print(3)\n"]},
    }
    report = lint("taco", taco_save_to_disk(tmp_path / "TACO"), tmp_path, add)
    assert findings(report) == {
        "train/0": "clean",
        "train/1": "clean",
        "test/0": "clean",  # "yes" for YES: its list says the comparison ignores case
        "test/1": "unjudgeable",  # its list says the answers are not unique, and it ships no checker
        "test/2": "clean",  # 0.3333333 for 0.3333333333: its list says reals, within 1e-5
    }
    assert report["test/0"]["incorrect"] == ["wrong_answer"]


def test_apps_lines(tmp_path: Path) -> None:
    add = {"4012": {"incorrect_solutions": ["print(3)\n"]}}
    report = lint("apps", apps_dataset(tmp_path / "apps"), tmp_path, add)
    assert findings(report) == {"4012": "clean"}


def test_livecodebench_over_its_public_and_private_tests(tmp_path: Path) -> None:
    add = {
        "3000": {"solutions": [COUNT_PAIRS], "incorrect_solutions": [THREE_PAIRS]},
        # right on its only private test (5 5 -> 10): its public test (1 2 -> 3) is graded too
        "abc300_a": {"solutions": [ADD_STDIN], "incorrect_solutions": ["print(10)\n"]},
    }
    report = lint("livecodebench", lcb_dataset(tmp_path / "lcb"), tmp_path, add)
    assert findings(report) == {"3000": "clean", "abc300_a": "clean"}


def test_code_contests_with_its_limits_files_and_solutions(tmp_path: Path) -> None:
    source = code_contests_dataset(tmp_path / "code_contests").parent.parent
    report = lint("codecontests", source, tmp_path, None, "--solutions", "5")
    assert findings(report) == {"1_A. Sum": "clean", "2_B. File sum": "clean"}
    assert report["1_A. Sum"]["correct"] == ["ok", "ok"]  # Python 3, C++
    assert report["1_A. Sum"]["incorrect"] == ["wrong_answer"]  # right on n <= 3 only
    assert report["2_B. File sum"]["correct"] == ["ok", "ok"]  # Java, C++, on input.txt / output.txt
    assert report["2_B. File sum"]["incorrect"] == ["wrong_answer"]  # reads stdin: nothing there, sums 0
    assert FILE_SUM_CPP  # the C++ file solution is the dataset's own
