"""Bad input is a clear message or an `invalid_job` answer, never a traceback: the jobs file reader,
`score_job` on arbitrary values (property-based, with hypothesis), and the command line itself."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalfarm.envs import Context, score_job
from evalfarm.sandbox import Status
from evalfarm.workers.jobs_file import BadLine, in_place, parse, read_lines

ROOT = Path(__file__).resolve().parent.parent
CONTRACT_STATUSES = {status.value for status in Status}
CONTRACT_CODES = {status.value: status.code for status in Status}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=25,
)
# Jobs that look almost right: a known env and an id, with arbitrary other fields.
job_like = st.fixed_dictionaries(
    {"id": st.one_of(st.text(min_size=1, max_size=8), json_values), "env": st.sampled_from(
        ["program", "codecontests", "humaneval", "call", "weight_edits", "nope"])},
    optional={
        "code": json_values, "completion": json_values, "problem": json_values, "limits": json_values,
        "answer": json_values, "game": json_values, "episodes": json_values, "func_name": json_values,
        "prompt": json_values, "test": json_values, "entry_point": json_values, "stdin": json_values,
    },
)  # fmt: skip


@pytest.fixture(scope="module")
def context():
    ctx = Context(slot=917)
    yield ctx
    ctx.close()


def one_result_per_line(data: bytes) -> list[dict[str, Any]]:
    """What the reader makes of `data`: each non-blank line a job (its `id` echoed) or its answer."""
    items = [parse(line) for line in read_lines(io.BytesIO(data), max_bytes=4096)]
    return list(in_place(items, lambda jobs: [{"id": "scored", "status": "ok", "code": 0} for _ in jobs]))


@given(st.binary(max_size=3000))
def test_any_bytes_give_one_answer_per_non_blank_line_and_never_raise(data: bytes) -> None:
    results = one_result_per_line(data)
    lines = [line for line in data.split(b"\n") if line.strip(b" \t\r\x0b\x0c\x1c\x1d\x1e\x1f\x85")]
    assert len(results) <= len(data.split(b"\n"))
    assert all(r["status"] in CONTRACT_STATUSES and r["code"] == CONTRACT_CODES[r["status"]] for r in results)
    assert len(results) >= sum(1 for line in lines if line.strip())  # every visibly non-blank line


def test_bad_lines_are_answered_in_place_and_name_the_line() -> None:
    data = b'{"id": "a"}\n\xff\xfe\n\n' + b"x" * 5000 + b'\n{"id": "b"}\nnot json\n' + b"[" * 3000 + b"\n"
    results = one_result_per_line(data)
    bad = "invalid_job"
    assert [r["status"] for r in results] == ["ok", bad, bad, "ok", bad, bad]
    assert "line 2 is not valid UTF-8" in results[1]["error"]
    assert "longer than the cap of 4096 bytes" in results[2]["error"]
    assert "not valid JSON" in results[4]["error"] and "nested too deeply" in results[5]["error"]


def test_a_long_line_is_skipped_without_reading_it_whole() -> None:
    stream = io.BytesIO(b"y" * (10 << 20) + b'\n{"id": "after"}\n')
    lines = list(read_lines(stream, max_bytes=1024))
    assert isinstance(lines[0], BadLine) and lines[1] == '{"id": "after"}\n'


@pytest.mark.sandbox
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(json_values, job_like))
def test_score_job_answers_any_json_value_with_one_contract_result(context: Context, value: Any) -> None:
    result = score_job(json.loads(json.dumps(value)), context)
    assert result["status"] in CONTRACT_STATUSES and result["code"] == CONTRACT_CODES[result["status"]]
    assert result["status"] != "infra_error", result["error"]  # a malformed job is never the farm's fault
    if result["status"] == "invalid_job":
        assert result["reward"] is None and isinstance(result["error"], str) and result["error"]
    json.dumps(result)  # and the answer itself is JSON


def evalfarm(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "evalfarm.workers.cli", *args]
    return subprocess.run(command, cwd=ROOT, input=stdin, capture_output=True, timeout=120)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["score", "/no/such/jobs.jsonl", "--inline"], "/no/such/jobs.jsonl: no such file"),
        (["score", "/tmp", "--inline"], "/tmp: is a directory"),
        (["run", "/no/such/program.py"], "program /no/such/program.py: no such file"),
    ],
)
def test_unreadable_input_is_one_line_and_exit_code_2(argv: list[str], message: str) -> None:
    completed = evalfarm(*argv)
    assert completed.returncode == 2
    assert message in completed.stderr.decode() and b"Traceback" not in completed.stderr


def test_an_empty_file_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    completed = evalfarm("score", str(empty), "--inline")
    assert completed.returncode == 0 and completed.stdout == b""
    assert b"holds no jobs" in completed.stderr and b"Traceback" not in completed.stderr


@pytest.mark.sandbox
def test_a_file_with_one_bad_line_scores_the_others(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    good = json.dumps({"id": "a", "env": "program", "code": "print(6 * 7)"})
    other = good.replace('"a"', '"b"')
    jobs.write_bytes(good.encode() + b"\n\xc3\x28 broken utf-8\n" + other.encode() + b"\n")
    completed = evalfarm("score", str(jobs), "--inline", "--workers", "1", "--no-progress")
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    results = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [(r["id"], r["status"]) for r in results] == [("a", "ok"), (None, "invalid_job"), ("b", "ok")]
    assert results[0]["stdout"] == "42\n" and "not valid UTF-8" in results[1]["error"]
    assert b"Traceback" not in completed.stderr


def test_a_field_given_as_none_is_a_field_not_given(ctx: Context) -> None:
    # What `datasets` writes for a key a row lacks: the field's default applies (or it is required).
    problem = {
        "id": "p",
        "description": None,
        "public_tests": None,
        "hidden_tests": [{"input": "", "output": ""}],
    }
    job = {"id": "n", "env": "codecontests", "code": "pass", "problem": problem, "problem_id": None,
           "reward_shape": None, "limits": None}  # fmt: skip
    result = score_job(job, ctx)
    assert result["status"] != "invalid_job", result["error"]
    missing = score_job({"id": "m", "env": "humaneval", "prompt": "", "completion": "", "test": None}, ctx)
    assert (missing["status"], missing["error"]) == ("invalid_job", "test: required")


def test_a_field_its_env_does_not_take_is_named_in_warnings(ctx: Context) -> None:
    job = {"id": "w", "env": "call", "code": "def f(): return 1", "func_name": "f", "deadline_s": 2, "arg": 1}
    result = score_job(job, ctx)
    assert result["status"] == "ok"
    assert result["warnings"] == ["unknown field 'arg' ignored", "unknown field 'deadline_s' ignored"]
    clean = score_job({"id": "c", "env": "call", "code": "def f(): return 1", "func_name": "f"}, ctx)
    assert "warnings" not in clean


def test_a_datasets_own_fields_ride_along_without_a_warning(ctx: Context) -> None:
    """A human-eval row scored as it is (its `task_id` and `canonical_solution` with it) is judged with
    no warning; a field no env's dataset has still is named."""
    row = {
        "task_id": "HumanEval/0",
        "prompt": "def one():\n",
        "canonical_solution": "    return 1\n",
        "test": "def check(candidate):\n    assert candidate() == 1\n",
        "entry_point": "one",
    }
    result = score_job({"id": "h", "env": "humaneval", **row, "completion": "    return 1\n"}, ctx)
    assert (result["status"], "warnings" in result) == ("ok", False)
    typo = score_job(
        {"id": "t", "env": "humaneval", **row, "completion": "    return 1\n", "tsak_id": 1}, ctx
    )
    assert typo["warnings"] == ["unknown field 'tsak_id' ignored"]
    # The catalog's dataset fields are another env's unknowns.
    called = score_job(
        {"id": "c", "env": "call", "code": "def f(): return 1", "func_name": "f", "task_id": 1}, ctx
    )
    assert called["warnings"] == ["unknown field 'task_id' ignored"]
