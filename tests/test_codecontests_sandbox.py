"""The codecontests env through the real sandbox: rewards, statuses, isolation of tests and secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.datasets import DatasetStore, install_dataset
from evalfarm.envs.scoring import score_job

pytestmark = pytest.mark.sandbox

ADD = {
    "id": "add",
    "public_tests": [{"input": "1 2\n", "output": "3\n"}],
    "hidden_tests": [{"input": f"{i} {3 * i}\n", "output": f"{4 * i}\n"} for i in range(8)],
}
MUL = {
    "id": "mul",
    "public_tests": [{"input": "2 3\n", "output": "6\n"}],
    "hidden_tests": [{"input": f"{i} {i}\n", "output": f"{i * i}\n"} for i in range(1, 6)],
}
SUM_CODE = "a, b = map(int, input().split())\nprint(a + b)\n"


def score(ctx: Context, problem: dict[str, Any] = ADD, **fields: Any) -> dict[str, Any]:
    return score_job({"id": "j", "env": "codecontests", "problem": problem, **fields}, ctx)


def test_rewards(ctx: Context) -> None:
    assert score(ctx, code=SUM_CODE)["reward"] == 1.0
    assert score(ctx, MUL, code=SUM_CODE)["reward"] == 0.0
    fraction = score(ctx, MUL, code=SUM_CODE, reward_shape="fraction_passed")
    assert fraction["reward"] == pytest.approx(1 / 5)  # 2 + 2 == 2 * 2 only
    assert [t["status"] for t in fraction["tests"]] == ["wrong_answer", "ok"] + ["wrong_answer"] * 3
    completion = f"Here is my solution:\n```python\n{SUM_CODE}```\nIt reads two numbers."
    assert score(ctx, completion=completion)["reward"] == 1.0


def test_feedback_of_a_real_run(ctx: Context) -> None:
    result = score(ctx, code="import sys\nprint('debug', file=sys.stderr)\nprint(4)\n")
    assert result["feedback"].startswith("=== public test 1/1 [FAIL | wrong_answer | ")
    assert "input:\n1 2\n\nexpected:\n3\ngot:\n4\nstderr:\ndebug\n" in result["feedback"]


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("while True:\n    pass\n", "timeout"),
        ("raise ValueError('x')\n", "runtime_error"),
        ("print(int(input().split()[0]) +\n", "syntax_error"),
        ("x = bytearray(1 << 34)\n", "memory_limit"),
        ("while True:\n    print('y' * 65536)\n", "output_limit"),
        ("import sys\nprint(3)\nsys.exit(3)\n", "runtime_error"),  # right output, non-zero exit
    ],
)
def test_failure_statuses(ctx: Context, code: str, status: str) -> None:
    result = score(ctx, code=code, limits={"wall_s": 1.0, "cpu_s": 0.5})
    assert (result["status"], result["reward"]) == (status, 0.0), result
    assert len(result["tests"]) <= 1  # all_or_nothing stopped at once


def test_each_test_is_a_fresh_process(ctx: Context) -> None:
    # State left by one test (a file in /tmp, a module-level variable) is never seen by the next.
    code = (
        "import os\np = '/tmp/seen'\n"
        "print('seen' if os.path.exists(p) else 'fresh')\nopen(p, 'w').write('1')\n"
    )
    problem = {"id": "fresh", "hidden_tests": [{"input": "", "output": "fresh\n"}] * 5}
    assert score(ctx, problem, code=code)["reward"] == 1.0


HUNTER = r"""
import os
import stat
MARKER = b"EXPECTED-" + b"7f3a9c"
found = []

def look(path):
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) and not path.startswith("/proc/"):
            return
        if "/fd/" in path and not stat.S_ISREG(os.stat(path).st_mode):
            return  # a pipe: reading our own stdout's pipe would block forever
        with open(path, "rb") as file:
            if MARKER in file.read(1 << 20):
                found.append(path)
    except Exception:
        pass

if MARKER.decode() in str(os.environ):
    found.append("environ")
for pid in os.listdir("/proc"):
    if pid.isdigit() or pid == "self":
        for name in ("cmdline", "environ"):
            look(f"/proc/{pid}/{name}")
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                look(f"/proc/{pid}/fd/{fd}")
        except Exception:
            pass
seen = 0
for root in ("/tmp", "/dev/shm", "/var", "/home", "/root", "/run", "/work", os.getcwd()):
    for directory, _, files in os.walk(root):
        for name in files[:200]:
            seen += 1
            look(os.path.join(directory, name))
        if seen > 5000:  # a bounded search: the point is where the worker could have put the outputs
            break
print(found[0] if found else "nothing found")
"""


def test_the_program_cannot_read_the_expected_output(ctx: Context) -> None:
    secret = "EXPECTED-7f3a9c secret answer"
    problem = {"id": "secret", "hidden_tests": [{"input": "", "output": secret}]}
    result = score(ctx, problem, code=HUNTER, limits={"wall_s": 10.0, "cpu_s": 5.0})
    assert result["status"] == "wrong_answer" and result["reward"] == 0.0
    assert secret not in json.dumps(result)


def test_problem_id_from_an_installed_dataset(ctx: Context, tmp_path: Path) -> None:
    source = tmp_path / "arith.jsonl"
    source.write_text(json.dumps(ADD) + "\n" + json.dumps(MUL) + "\n")
    install_dataset(source, tmp_path / "datasets")
    worker = Context(slot=0, datasets=DatasetStore(tmp_path / "datasets"))
    worker._sandbox = ctx.sandbox  # share the started slot
    job = {"id": "j", "env": "codecontests", "code": "a, b = map(int, input().split())\nprint(a * b)\n"}
    assert score_job(job | {"problem_id": "mul"}, worker)["reward"] == 1.0
    assert score_job(job | {"problem_id": "add", "dataset": "arith"}, worker)["reward"] == 0.0
    unknown = score_job(job | {"problem_id": "div"}, worker)
    assert unknown["status"] == "invalid_job" and unknown["error"].startswith("problem_id: unknown problem")
