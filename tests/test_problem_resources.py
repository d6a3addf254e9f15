"""A problem's own resources, judged in the real sandbox: the time and memory limits its dataset
gives it (applied to every test, named in the result, overridden by a job's), and the files its
program reads and writes (input.txt, output.txt), in every language the farm runs."""

from __future__ import annotations

from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.codecontests import CodeContestsEnv
from evalfarm.envs.scoring import score_job

pytestmark = pytest.mark.sandbox

ADD_TESTS = [{"input": "2 3\n", "output": "5\n"}, {"input": "40 2\n", "output": "42\n"}]
FILES = {"input": "input.txt", "output": "output.txt"}
# Spends `seconds` of CPU, then answers: a correct program that is only so fast.
BURN = (
    "import time\nwhile time.process_time() < {seconds}:\n    pass\n"
    + "a, b = map(int, input().split())\nprint(a + b)\n"
)
# A wall clock no busy machine reaches: the verdicts below are the CPU limit's.
ROOMY = 30.0
# Holds `mb` MB, then answers.
HOLD = "block = bytearray({mb} << 20)\na, b = map(int, input().split())\nprint(a + b)\n"

FILE_ADD = {
    "python": r"""
a, b = map(int, open("input.txt").read().split())
open("output.txt", "w").write(f"{a + b}\n")
""",
    "cpp": r"""
#include <cstdio>
int main() {
    freopen("input.txt", "r", stdin);
    freopen("output.txt", "w", stdout);
    long a, b;
    scanf("%ld %ld", &a, &b);
    printf("%ld\n", a + b);
}
""",
    "c": r"""
#include <stdio.h>
int main(void) {
    FILE *in = fopen("input.txt", "r"), *out = fopen("output.txt", "w");
    long a, b;
    fscanf(in, "%ld %ld", &a, &b);
    fprintf(out, "%ld\n", a + b);
    return 0;
}
""",
    "java": r"""
import java.io.*;
import java.util.*;
public class Add {
    public static void main(String[] args) throws IOException {
        Scanner in = new Scanner(new File("input.txt"));
        long a = in.nextLong(), b = in.nextLong();
        PrintWriter out = new PrintWriter("output.txt");
        out.println(a + b);
        out.close();
    }
}
""",
    "nodejs": r"""
const fs = require("fs");
const [a, b] = fs.readFileSync("input.txt", "utf8").trim().split(/\s+/).map(Number);
fs.writeFileSync("output.txt", `${a + b}\n`);
""",
}
STDIN_ADD = "a, b = map(int, input().split())\nprint(a + b)\n"


def judge(ctx: Context, problem: dict[str, Any], code: str, **fields: Any) -> dict[str, Any]:
    job = {"id": "j", "env": "codecontests", "code": code, "problem": {"id": "p", **problem}, **fields}
    return score_job(job, ctx)


# --- limits ----------------------------------------------------------------------------------------


def test_a_problem_without_limits_runs_under_the_envs_defaults(ctx: Context) -> None:
    result = judge(ctx, {"hidden_tests": ADD_TESTS}, STDIN_ADD)
    defaults = CodeContestsEnv.default_limits
    assert result["status"] == "ok"
    assert (result["limits"]["cpu_s"], result["limits"]["wall_s"], result["limits"]["memory_mb"]) == (
        defaults.cpu_s,
        defaults.wall_s,
        defaults.memory_mb,
    )


def test_a_short_time_limit_fails_a_program_a_longer_one_passes(ctx: Context) -> None:
    slow = BURN.format(seconds=1.0)  # a second of CPU: twice the problem's limit
    result = judge(ctx, {"hidden_tests": ADD_TESTS[:1], "limits": {"cpu_s": 0.5}}, slow)
    assert (result["status"], result["reward"]) == ("timeout", 0.0), result
    # the wall clock: twice the CPU limit, and at least one second more
    assert (result["limits"]["cpu_s"], result["limits"]["wall_s"]) == (0.5, 1.5)
    roomy = judge(ctx, {"hidden_tests": ADD_TESTS[:1], "limits": {"cpu_s": 2.0, "wall_s": ROOMY}}, slow)
    assert roomy["status"] == "ok", roomy


def test_a_long_time_limit_passes_a_program_the_defaults_fail(ctx: Context) -> None:
    slow = BURN.format(seconds=2.5)
    assert judge(ctx, {"hidden_tests": ADD_TESTS[:1]}, slow)["status"] == "timeout"  # 2 s of CPU by default
    result = judge(ctx, {"hidden_tests": ADD_TESTS[:1], "limits": {"cpu_s": 6.0, "wall_s": ROOMY}}, slow)
    assert (result["status"], result["limits"]["cpu_s"]) == ("ok", 6.0), result


def test_a_jobs_limits_override_the_problems(ctx: Context) -> None:
    problem = {"hidden_tests": ADD_TESTS[:1], "limits": {"cpu_s": 0.5, "memory_mb": 128}}
    result = judge(ctx, problem, STDIN_ADD, limits={"cpu_s": 3})
    # the job's CPU limit brings its own wall clock by the problem's rule; the problem's memory stays
    applied = result["limits"]
    assert (result["status"], applied["cpu_s"], applied["wall_s"], applied["memory_mb"]) == (
        "ok",
        3,
        6.0,
        128,
    )
    slow = judge(ctx, problem, BURN.format(seconds=1.0), limits={"cpu_s": 3, "wall_s": ROOMY})
    assert slow["status"] == "ok", slow


def test_a_problems_memory_limit_is_applied(ctx: Context) -> None:
    hungry = HOLD.format(mb=200)
    assert judge(ctx, {"hidden_tests": ADD_TESTS[:1]}, hungry)["status"] == "ok"
    result = judge(ctx, {"hidden_tests": ADD_TESTS[:1], "limits": {"memory_mb": 64}}, hungry)
    assert (result["status"], result["limits"]["memory_mb"]) == ("memory_limit", 64), result


def test_a_problems_memory_limit_caps_a_compiled_program_too(ctx: Context) -> None:
    code = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main() {
    char *block = (char *) malloc(200 << 20);
    if (block) memset(block, 1, 200 << 20);
    long a, b, held = 0;
    scanf("%ld %ld", &a, &b);
    for (long i = 0; block && i < (200 << 20); i += 4096) held += block[i];  // every page is used
    printf("%ld\n", a + b + (held == 7));
}
"""
    assert judge(ctx, {"hidden_tests": ADD_TESTS[:1]}, code, language="cpp")["status"] == "ok"
    result = judge(ctx, {"hidden_tests": ADD_TESTS[:1], "limits": {"memory_mb": 64}}, code, language="cpp")
    assert result["status"] in ("memory_limit", "runtime_error") and result["reward"] == 0.0, result


@pytest.mark.parametrize(
    ("limits", "error"),
    [
        ({"cpu_s": -1}, "problem.limits.cpu_s: Input should be greater than 0"),
        ({"memory_mb": 256.5}, "problem.limits.memory_mb: Input should be a valid integer"),
        ({"stack_mb": 64}, "problem.limits.stack_mb: Extra inputs are not permitted"),
    ],
)
def test_a_problems_bad_limits_are_an_invalid_job(ctx: Context, limits: dict[str, Any], error: str) -> None:
    result = judge(ctx, {"hidden_tests": ADD_TESTS, "limits": limits}, STDIN_ADD)
    assert (result["status"], result["error"]) == ("invalid_job", error)


# --- files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", list(FILE_ADD))
def test_a_file_problem_is_judged_on_the_file_in_every_language(ctx: Context, language: str) -> None:
    if language not in ctx.sandbox.offered_languages():
        pytest.skip(f"{language} is not offered on this machine")
    public = [{"input": "1 1\n", "output": "2\n"}]
    problem = {"public_tests": public, "hidden_tests": ADD_TESTS, "files": FILES}
    result = judge(ctx, problem, FILE_ADD[language], language=language)
    assert (result["status"], result["reward"], result["passed"]) == ("ok", 1.0, 2), result
    assert "2" in result["feedback"]  # what the program wrote in output.txt is what the model sees


def test_a_file_problem_gives_no_stdin_and_takes_no_stdout(ctx: Context) -> None:
    problem = {"hidden_tests": ADD_TESTS, "files": FILES}
    stdin_reader = judge(ctx, problem, STDIN_ADD)
    assert (stdin_reader["status"], stdin_reader["reward"]) == ("runtime_error", 0.0)  # EOF on stdin
    printer = "a, b = map(int, open('input.txt').read().split())\nprint(a + b)\n"
    result = judge(ctx, problem, printer)
    assert (result["status"], result["reward"]) == ("wrong_answer", 0.0)  # output.txt was never written


def test_a_judge_that_allows_both_takes_stdin_and_stdout_too(ctx: Context) -> None:
    problem = {"hidden_tests": ADD_TESTS, "files": {**FILES, "stdio": True}}
    assert judge(ctx, problem, STDIN_ADD)["status"] == "ok"
    assert judge(ctx, problem, FILE_ADD["python"])["status"] == "ok"
    assert judge(ctx, problem, FILE_ADD["cpp"], language="cpp")["status"] == "ok"


def test_one_side_in_a_file_the_other_on_stdio(ctx: Context) -> None:
    reads_file = "a, b = map(int, open('input.txt').read().split())\nprint(a + b)\n"
    assert (
        judge(ctx, {"hidden_tests": ADD_TESTS, "files": {"input": "input.txt"}}, reads_file)["status"] == "ok"
    )
    writes_file = "a, b = map(int, input().split())\nopen('answer.out', 'w').write(str(a + b))\n"
    assert (
        judge(ctx, {"hidden_tests": ADD_TESTS, "files": {"output": "answer.out"}}, writes_file)["status"]
        == "ok"
    )


def test_the_checker_judges_the_output_files_content(ctx: Context) -> None:
    checker = (
        "import sys\ngiven, correct, solution = (open(p).read().split() for p in sys.argv[1:4])\n"
        "print(1 if sorted(solution) == sorted(given[1:]) else 0)\n"
    )
    problem = {
        "hidden_tests": [{"input": "3\n1 2 3\n", "output": "1 2 3\n"}],
        "files": FILES,
        "checker": {"type": "program", "language": "python", "protocol": "openr1", "code": checker},
    }
    reverse = r"""
#include <cstdio>
int main() {
    freopen("input.txt", "r", stdin);
    freopen("output.txt", "w", stdout);
    int n, a[8];
    scanf("%d", &n);
    for (int i = 0; i < n; i++) scanf("%d", &a[i]);
    for (int i = n - 1; i >= 0; i--) printf("%d ", a[i]);
    puts("");
}
"""
    assert judge(ctx, problem, reverse, language="cpp")["status"] == "ok"
    wrong = reverse.replace('printf("%d ", a[i])', 'printf("%d ", a[i] + 1)')
    assert judge(ctx, problem, wrong, language="cpp")["status"] == "wrong_answer"


@pytest.mark.parametrize("language", ["python", "cpp"])
def test_an_output_file_past_the_output_cap_is_output_limit(ctx: Context, language: str) -> None:
    flood = {
        "python": "open('output.txt', 'w').write('5' * 5000)\n",
        "cpp": '#include <cstdio>\nint main() { FILE *f = fopen("output.txt", "w");'
        " for (int i = 0; i < 5000; i++) fputc('5', f); fclose(f); }\n",
    }[language]
    result = judge(
        ctx,
        {"hidden_tests": ADD_TESTS, "files": FILES},
        flood,
        language=language,
        limits={"output_bytes": 1000},
    )
    assert (result["status"], result["reward"]) == ("output_limit", 0.0), result


def test_an_output_file_past_what_the_sandbox_fetches_is_output_limit(ctx: Context) -> None:
    flood = r"""
#include <cstdio>
int main() {
    FILE *file = fopen("output.txt", "w");
    for (long i = 0; i < (20L << 20); i++) fputc('5', file);
    fclose(file);
}
"""
    result = judge(
        ctx,
        {"hidden_tests": ADD_TESTS[:1], "files": FILES},
        flood,
        language="cpp",
        limits={"output_bytes": 64 << 20},
    )
    assert (result["status"], result["limits"]["file_size_mb"]) == ("output_limit", 8), result


@pytest.mark.parametrize(
    ("problem", "error"),
    [
        ({"files": {"input": "../input.txt"}}, "problem.files.input: String should match pattern"),
        ({"files": {}}, "problem.files: files: name `input`, `output` or both"),
        (
            {"files": FILES, "fn_name": "f", "hidden_tests": [{"input": [1], "output": 1}]},
            "files: a problem of",
        ),
    ],
)
def test_a_problems_bad_files_are_an_invalid_job(ctx: Context, problem: dict[str, Any], error: str) -> None:
    result = judge(ctx, {"hidden_tests": ADD_TESTS, **problem}, STDIN_ADD)
    assert result["status"] == "invalid_job" and error in result["error"], result["error"]
