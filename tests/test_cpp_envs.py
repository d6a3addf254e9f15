"""C++ answers through the `codecontests` and `program` envs and the real sandbox: the same verdicts
and rewards a Python program of the same behaviour gets, a compile once per job, compile errors as
feedback, and `language` validated."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.codecontests import extract_code
from evalfarm.envs.scoring import score_job

pytestmark = pytest.mark.sandbox

ADD = {
    "id": "add",
    "public_tests": [{"input": "1 2\n", "output": "3\n"}],
    "hidden_tests": [{"input": f"{i} {3 * i}\n", "output": f"{4 * i}\n"} for i in range(8)],
}
SQUARE = {
    "id": "square",
    "public_tests": [],
    "hidden_tests": [{"input": f"{i} {i}\n", "output": f"{i * i}\n"} for i in range(1, 6)],
}
CPP_SUM = (
    "#include <iostream>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n"
)

# The same behaviours in both languages: the farm's verdict must not depend on which one wrote it.
PAIRS = {
    "sum": (
        "a, b = map(int, input().split())\nprint(a + b)\n",
        CPP_SUM,
    ),
    "wrong": (
        "a, b = map(int, input().split())\nprint(a - b)\n",
        "#include <iostream>\nint main() { int a, b; std::cin >> a >> b; std::cout << a - b << '\\n'; }\n",
    ),
    "crash-on-big": (
        "a, b = map(int, input().split())\nif a > 3:\n    raise SystemExit(4)\nprint(a + b)\n",
        "#include <iostream>\nint main() { int a, b; std::cin >> a >> b; if (a > 3) return 4;"
        " std::cout << a + b << '\\n'; }\n",
    ),
    "spin-on-big": (
        "a, b = map(int, input().split())\nwhile a > 5:\n    pass\nprint(a + b)\n",
        "#include <iostream>\nint main() { volatile int a; int b; std::cin >> b; a = b; std::cin >> b;"
        " while (a > 5) {} std::cout << a + b << '\\n'; }\n",
    ),
}
VERDICT_FIELDS = ("status", "reward", "passed", "total")


def score(ctx: Context, problem: dict[str, Any] = ADD, **fields: Any) -> dict[str, Any]:
    return score_job({"id": "j", "env": "codecontests", "problem": problem, **fields}, ctx)


@pytest.mark.parametrize("shape", ["all_or_nothing", "fraction_passed"])
@pytest.mark.parametrize("name", list(PAIRS))
def test_a_cpp_answer_gets_the_verdict_of_the_same_python_answer(ctx: Context, name: str, shape: str) -> None:
    python, cpp = PAIRS[name]
    limits = {"wall_s": 1.0, "cpu_s": 0.5}
    by_python = score(ctx, code=python, reward_shape=shape, limits=limits)
    by_cpp = score(ctx, code=cpp, reward_shape=shape, limits=limits, language="cpp")
    assert {k: by_cpp[k] for k in VERDICT_FIELDS} == {k: by_python[k] for k in VERDICT_FIELDS}
    assert [t["status"] for t in by_cpp["tests"]] == [t["status"] for t in by_python["tests"]]
    assert by_cpp["compile"]["status"] == "ok" and "compile" not in by_python


def test_a_job_compiles_once_and_a_duplicate_answer_not_at_all(ctx: Context) -> None:
    source = CPP_SUM + "// compiled once per job\n"
    first = score(ctx, code=source, language="cpp")
    again = score(ctx, completion=f"My answer:\n```cpp\n{source}```\n", language="cpp")
    assert (first["status"], first["reward"], first["passed"]) == ("ok", 1.0, 8)
    assert first["compile"]["cached"] is False and first["compile"]["wall_s"] > 0
    assert (again["reward"], again["compile"]["cached"]) == (1.0, True)


def test_a_compile_error_stops_the_job_and_is_the_models_feedback(ctx: Context) -> None:
    broken = "int main() { return missing_name; }\n"
    result = score(ctx, code=broken, language="cpp", reward_shape="fraction_passed")
    assert (result["status"], result["reward"], result["tests"]) == ("syntax_error", 0.0, [])
    assert result["error"].startswith("public test run: syntax_error: compile error: ")
    assert "missing_name" in result["feedback"] and "stderr:" in result["feedback"]
    assert result["compile"]["status"] == "syntax_error"
    hidden_only = score(ctx, SQUARE, code=broken, language="cpp", reward_shape="fraction_passed")
    assert hidden_only["status"] == "syntax_error" and len(hidden_only["tests"]) == 1  # not one per test


def test_a_compile_past_its_limit_stops_the_job(ctx: Context) -> None:
    result = score(
        ctx, SQUARE, code="#include <bits/stdc++.h>\nint main() {}\n", language="cpp",
        reward_shape="fraction_passed", limits={"compile_wall_s": 0.2},
    )  # fmt: skip
    assert (result["status"], result["reward"], len(result["tests"])) == ("timeout", 0.0, 1)
    assert "compile" in result["error"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```python\nprint(1)\n```\n```cpp\nint main(){}\n```", "int main(){}\n"),
        ("```\n3\n1 2 3\n```\n```c++\nint main(){return 1;}\n```", "int main(){return 1;}\n"),
        ("```CC\nint x;\n```", "int x;\n"),
        ("```cxx\nint y;\n```", "int y;\n"),
    ],
)
def test_a_cpp_job_takes_the_first_cpp_block(text: str, expected: str) -> None:
    assert extract_code(text, "cpp") == expected


def test_a_cpp_answer_without_a_cpp_block_is_a_parse_error(ctx: Context) -> None:
    result = score(ctx, completion="```python\nprint(3)\n```\n```\nint main(){}\n```", language="cpp")
    assert (result["status"], result["reward"]) == ("parse_error", 0.0)
    assert result["error"] == "completion: no fenced C++ code block"
    assert "```cpp" in result["feedback"]


def test_a_cpp_program_cannot_read_the_expected_output(ctx: Context) -> None:
    hunter = r"""
    #include <dirent.h>
    #include <fstream>
    #include <iostream>
    #include <iterator>
    #include <string>
    bool holds(const std::string& path) {
        std::ifstream file(path, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        return text.find(std::string("EXPECTED-") + "7f3a9c") != std::string::npos;
    }
    void walk(const std::string& root, int depth, std::string& found) {
        DIR* dir = opendir(root.c_str());
        for (dirent* e; dir && depth < 4 && found.empty() && (e = readdir(dir));) {
            std::string name = e->d_name, path = root + "/" + name;
            if (name == "." || name == "..") continue;
            if (e->d_type == DT_DIR) walk(path, depth + 1, found);
            else if (e->d_type == DT_REG && holds(path)) found = path;
        }
        if (dir) closedir(dir);
    }
    int main() {
        std::string found;
        for (const char* root : {"/tmp", "/run", "/home", "/root", "/work", "/var"}) walk(root, 0, found);
        for (const char* path : {"/proc/1/cmdline", "/proc/1/environ"}) if (holds(path)) found = path;
        std::cout << (found.empty() ? "nothing found" : found) << "\n";
    }
    """
    secret = "EXPECTED-7f3a9c secret answer"
    problem = {"id": "secret", "hidden_tests": [{"input": "", "output": secret}]}
    result = score(ctx, problem, code=hunter, language="cpp", limits={"wall_s": 10.0, "cpu_s": 5.0})
    assert result["status"] == "wrong_answer" and secret not in json.dumps(result)


def test_the_program_env_runs_cpp_and_reports_its_compile(ctx: Context) -> None:
    job = {"id": "p", "env": "program", "code": CPP_SUM, "stdin": "20 22\n", "language": "cpp"}
    result = score_job(job, ctx)
    assert (result["status"], result["stdout"], result["exit_code"]) == ("ok", "42\n", 0)
    assert set(result["compile"]) == {"status", "wall_s", "cached"} and result["env_version"] == "4"
    broken = score_job({**job, "code": "int main() {"}, ctx)
    assert broken["status"] == "syntax_error" and "expected" in broken["stderr"]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"language": "fortran"}, "language: 'fortran' is not a language (one of python, cpp, c, rust"),
        (
            {"language": "cpp", "files": {"a/b.txt": ""}},
            "files: 'a/b.txt': a compiled program's file is a name",
        ),
        ({"language": "cpp", "fetch_files": ["x:y"]}, "files: 'x:y': a compiled program's file is a name"),
        ({"language": "java", "files": {"main.jar": ""}}, "files: 'main.jar': the name of the program's own"),
    ],
)
def test_bad_language_fields_are_invalid_jobs(ctx: Context, fields: dict[str, Any], error: str) -> None:
    result = score_job({"id": "p", "env": "program", "code": "int main(){}", **fields}, ctx)
    assert result["status"] == "invalid_job" and result["error"].startswith(error), result["error"]


def test_a_compiled_programs_files_come_and_go_as_a_python_programs(ctx: Context) -> None:
    code = (
        '#include <cstdio>\nint main() { FILE *in = fopen("in.txt", "r"); int x; fscanf(in, "%d", &x);'
        ' FILE *out = fopen("out.txt", "w"); fprintf(out, "%d", 2 * x); fclose(out);'
        ' FILE *again = fopen("in.txt", "a"); fputs(" seen", again); fclose(again); }\n'
    )
    files = {"in.txt": base64.b64encode(b"21").decode()}
    job = {"id": "p", "env": "program", "language": "cpp", "code": code, "files": files,
           "fetch_files": ["out.txt", "in.txt", "never.txt"]}  # fmt: skip
    result = score_job(job, ctx)
    assert result["status"] == "ok", result
    fetched = {path: base64.b64decode(content) for path, content in result["files"].items()}
    # a compiled program's requested file comes back even when it wrote nothing there (empty)
    assert fetched == {"out.txt": b"42", "in.txt": b"21 seen", "never.txt": b""}
