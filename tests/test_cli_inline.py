"""`evalfarm run` and `evalfarm score --inline`: results in input order, no line ever lost."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox
EVALFARM = [sys.executable, "-m", "evalfarm.workers.cli"]
ROOT = Path(__file__).resolve().parent.parent


def evalfarm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EVALFARM, *args], capture_output=True, text=True, cwd=ROOT, timeout=300, check=check
    )


def test_run_prints_the_program_result(tmp_path: Path) -> None:
    program = tmp_path / "double.py"
    program.write_text("print(int(input()) * 2)")
    stdin = tmp_path / "in.txt"
    stdin.write_text("21\n")
    result = json.loads(evalfarm("run", str(program), "--stdin", str(stdin), "--wall-s", "3").stdout)
    assert (result["status"], result["code"], result["stdout"]) == ("ok", 0, "42\n")
    assert result["limits"]["wall_s"] == 3.0
    assert {"stderr", "exit_code", "signal", "wall_s", "cpu_s", "max_rss_mb", "stdout_truncated"} <= set(
        result
    )


def test_run_compiles_and_runs_a_cpp_file(tmp_path: Path) -> None:
    program = tmp_path / "double.cpp"
    program.write_text(
        "#include <iostream>\nint main() { int x; std::cin >> x; std::cout << 2 * x << '\\n'; }\n"
    )
    stdin = tmp_path / "in.txt"
    stdin.write_text("21\n")
    result = json.loads(evalfarm("run", str(program), "--stdin", str(stdin), "--compile-wall-s", "60").stdout)
    assert (result["status"], result["stdout"], result["compile"]["status"]) == ("ok", "42\n", "ok")
    assert result["limits"]["compile_wall_s"] == 60.0
    as_python = evalfarm("run", str(program), "--language", "python", check=False)
    assert as_python.returncode == 1 and json.loads(as_python.stdout)["status"] == "syntax_error"


def test_run_exits_nonzero_on_a_failed_program(tmp_path: Path) -> None:
    program = tmp_path / "slow.py"
    program.write_text("while True: pass")
    completed = evalfarm("run", str(program), "--cpu-s", "1", check=False)
    assert completed.returncode == 1
    assert json.loads(completed.stdout)["status"] == "timeout"


def test_score_inline_keeps_order_and_every_line(tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"job-{i}", "env": "program", "code": f"print({i})"}) for i in range(40)]
    lines.insert(7, "{not json")
    lines.insert(20, json.dumps({"id": "no-env"}))
    lines.insert(
        30, json.dumps({"id": "slow", "env": "program", "code": "while 1: pass", "limits": {"cpu_s": 1}})
    )
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    completed = evalfarm("score", str(jobs), "-o", str(out), "--inline", "--workers", "2")
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == len(lines)
    assert results[7]["status"] == "invalid_job" and results[7]["id"] is None
    assert results[20]["status"] == "invalid_job" and "env" in results[20]["error"]
    assert results[30]["status"] == "timeout"
    ordinary = [r for r in results if r["id"] and r["id"].startswith("job-")]
    assert [r["stdout"] for r in ordinary] == [f"{i}\n" for i in range(40)]
    assert "job/s" in completed.stderr  # the progress bar


def test_score_inline_equals_run_for_the_same_program(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text("import sys\nprint(sorted(sys.stdin.read().split()))")
    stdin = tmp_path / "in.txt"
    stdin.write_text("b c a")
    single = json.loads(evalfarm("run", str(program), "--stdin", str(stdin)).stdout)
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        json.dumps({"id": "p.py", "env": "program", "code": program.read_text(), "stdin": "b c a"})
    )
    batch = json.loads(evalfarm("score", str(jobs), "--inline", "--no-progress").stdout)
    volatile = {"wall_s", "cpu_s", "max_rss_mb", "run_s"}
    assert {k: v for k, v in single.items() if k not in volatile} == {
        k: v for k, v in batch.items() if k not in volatile
    }


@pytest.mark.parametrize("where", ["default directory", "EVALFARM_DATASETS_DIR"])
def test_score_inline_finds_an_installed_dataset(tmp_path: Path, where: str) -> None:
    # `datasets load` and the scoring processes agree on the directory, whether or not it is set.
    problems = tmp_path / "mul.jsonl"
    tests = [{"input": "3 4\n", "output": "12\n"}]
    problems.write_text(
        json.dumps({"id": "mul", "description": "", "public_tests": tests, "hidden_tests": tests})
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    if where == "EVALFARM_DATASETS_DIR":
        env["EVALFARM_DATASETS_DIR"] = str(tmp_path / "datasets")
    code = "a, b = map(int, input().split())\nprint(a * b)"
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"id": "j", "env": "codecontests", "code": code, "problem_id": "mul"}) + "\n")

    def evalfarm_in(*args: str) -> str:
        completed = subprocess.run(
            [*EVALFARM, *args], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env
        )
        assert completed.returncode == 0, completed.stderr
        return completed.stdout

    evalfarm_in("datasets", "load", str(problems))
    result = json.loads(evalfarm_in("score", str(jobs), "--inline", "--no-progress"))
    assert (result["status"], result["reward"]) == ("ok", 1.0), result["error"]
    installed = tmp_path / ("datasets" if env.get("EVALFARM_DATASETS_DIR") else "home/.local/share/evalfarm")
    assert list(installed.rglob("mul.jsonl"))


def test_inline_pools_pin_each_slot_and_can_follow_one_another(tmp_path: Path) -> None:
    # Each pool process, its sandbox servers and so its runs sit on one core; and a second pool in the
    # same process uses the slots it launched (the slot index is the pool's own count).
    script = tmp_path / "two_pools.py"
    script.write_text(
        "import json, logging, sys\n"
        "from evalfarm.workers.inline import InlinePool\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "code = 'import os, time\\ntime.sleep(0.2)\\nprint(sorted(os.sched_getaffinity(0)))'\n"
        "job = {'env': 'program', 'code': code}\n"
        "for _ in range(2):\n"
        "    with InlinePool(2) as pool:  # one job per message and slow jobs: both slots get some\n"
        "        for result in pool.score([dict(job, id=str(i)) for i in range(6)], chunksize=1):\n"
        "            print(json.dumps([result['status'], json.loads(result['stdout'])]))\n"
    )
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stderr, completed.stderr  # no server left without its client
    started = re.findall(r"sandbox slot (\d+) \(", completed.stderr)
    assert sorted(started) == ["0", "0", "1", "1"], completed.stderr  # two slots per pool, no more
    results = [json.loads(line) for line in completed.stdout.splitlines()]
    assert len(results) == 12 and all(status == "ok" for status, _ in results)
    assert all(len(cores) == 1 for _, cores in results)
    if len(os.sched_getaffinity(0)) >= 2:
        assert len({cores[0] for _, cores in results}) >= 2  # the two slots on different cores
