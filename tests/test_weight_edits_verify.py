"""`evalfarm verify` for weight edits: the same reward.json bytes as seed 004's `main()`, clear failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.scoring import score_job
from evalfarm.envs.trajectory import assistant_answer
from evalfarm.workers.cli import build_parser, main

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "weight_edits_verify_golden.json").read_text())
CASES = {case["name"]: case for case in GOLDEN["cases"]}
VARIABLES = ("WEIGHT_SPACE_GAME", "WEIGHT_SPACE_SOURCE", "WEIGHT_SPACE_EPISODES")
NO_ASSISTANT = {"no_assistant_message", "no_steps"}


def run_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], trajectory: Any, *flags: str
) -> tuple[int, Path]:
    """Run `evalfarm verify` on a trajectory in tmp_path; return the exit status and reward.json path."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    trajectory_path, reward_path = tmp_path / "trajectory.json", tmp_path / "verifier" / "reward.json"
    if trajectory is not None:
        trajectory_path.write_text(trajectory if isinstance(trajectory, str) else json.dumps(trajectory))
    status = main(["verify", "--trajectory", str(trajectory_path), "--reward", str(reward_path), *flags])
    return status, reward_path


@pytest.mark.minatar
@pytest.mark.parametrize("name", list(CASES))
def test_reward_json_is_the_seeds_byte_for_byte(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[name]
    status, reward_path = run_verify(tmp_path, monkeypatch, case["variables"], case["trajectory"])
    assert reward_path.read_text() == case["reward_json"]
    if name in NO_ASSISTANT:
        assert status == 1 and "no assistant message" in capsys.readouterr().err
    else:
        assert status == 0


def test_defaults_are_the_seeds_paths() -> None:
    args = build_parser(["verify"]).parse_args(["verify"])
    assert (str(args.trajectory), str(args.reward), args.env) == (
        "/logs/trajectory.json",
        "/logs/verifier/reward.json",
        "weight_edits",
    )


@pytest.mark.parametrize(
    ("variables", "trajectory", "message"),
    [
        ({"WEIGHT_SPACE_SOURCE": "original"}, {}, "missing environment variable WEIGHT_SPACE_GAME"),
        ({}, {}, "WEIGHT_SPACE_GAME and WEIGHT_SPACE_SOURCE"),
        (
            {
                "WEIGHT_SPACE_GAME": "breakout",
                "WEIGHT_SPACE_SOURCE": "original",
                "WEIGHT_SPACE_EPISODES": "ten",
            },
            {},
            "WEIGHT_SPACE_EPISODES: not an integer",
        ),
        ({"WEIGHT_SPACE_GAME": "breakout", "WEIGHT_SPACE_SOURCE": "original"}, None, "trajectory: no file"),
        ({"WEIGHT_SPACE_GAME": "breakout", "WEIGHT_SPACE_SOURCE": "original"}, "{not json", "not valid JSON"),
        (
            {"WEIGHT_SPACE_GAME": "breakout", "WEIGHT_SPACE_SOURCE": "original"},
            "[1, 2]",
            "JSON object, not list",
        ),
        (
            {"WEIGHT_SPACE_GAME": "breakout", "WEIGHT_SPACE_SOURCE": "original"},
            {"steps": ["not an object"]},
            "not in the steps/messages format",
        ),
    ],
)
def test_bad_input_fails_clearly_with_the_seeds_failure_shape(
    variables: dict[str, str],
    trajectory: Any,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, reward_path = run_verify(tmp_path, monkeypatch, variables, trajectory)
    assert status == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    reward = json.loads(reward_path.read_text())
    assert reward["normalized_score"] == 0.0 and reward["parse_success"] == 0.0 and message in reward["error"]
    assert list(reward)[:5] == ["normalized_score", "game", "source", "episodes", "parse_success"]


@pytest.mark.minatar
def test_flags_override_the_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES["string_content"]
    flags = ("--game", "breakout", "--source", "original", "--episodes", "5")
    status, reward_path = run_verify(tmp_path, monkeypatch, {}, case["trajectory"], *flags)
    assert status == 0 and reward_path.read_text() == case["reward_json"]


@pytest.mark.minatar
@pytest.mark.parametrize("name", ["list_of_parts", "last_of_several_turns", "content_none_is_skipped"])
def test_a_job_may_carry_the_trajectory_instead_of_the_answer(name: str) -> None:
    case = CASES[name]
    variables = case["variables"]
    job = {
        "id": name,
        "env": "weight_edits",
        "game": variables["WEIGHT_SPACE_GAME"],
        "episodes": int(variables["WEIGHT_SPACE_EPISODES"]),
    }
    from_trajectory = score_job({**job, "trajectory": case["trajectory"]}, Context())
    from_answer = score_job({**job, "answer": assistant_answer(case["trajectory"])}, Context())
    expected = json.loads(case["reward_json"])
    assert from_trajectory["reward"] == from_answer["reward"] == expected.pop("normalized_score")
    assert from_trajectory["metadata"] == expected


def test_a_malformed_trajectory_in_a_job_is_invalid() -> None:
    job = {"id": "t", "env": "weight_edits", "game": "breakout", "trajectory": {"steps": [3]}}
    result = score_job(job, Context())
    assert result["status"] == "invalid_job" and result["error"].startswith("trajectory: ")


class FakeFarm:
    """Stands in for `broker.farm.Farm`: three processes, each job scored in this process."""

    def __init__(self, broker_url: str, progress: bool = True) -> None:
        self.broker_url = broker_url

    def __enter__(self) -> FakeFarm:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def processes(self) -> int:
        return 3

    def score(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assert len(jobs) == 3 and all("episode_range" in job for job in jobs)
        return [score_job(job, Context()) for job in jobs]


@pytest.mark.minatar
@pytest.mark.parametrize("name", ["list_of_parts", "last_turn_without_block"])
def test_broker_grades_split_over_the_farm_with_the_same_bytes(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalfarm.broker.farm

    monkeypatch.setattr(evalfarm.broker.farm, "Farm", FakeFarm)
    case = CASES[name]
    flags = ("--broker", "redis://farm.invalid:6379/0")
    status, reward_path = run_verify(tmp_path, monkeypatch, case["variables"], case["trajectory"], *flags)
    assert status == 0 and reward_path.read_text() == case["reward_json"]


def test_code_envs_get_the_answer_as_completion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evalfarm.broker.farm

    seen: list[dict[str, Any]] = []

    class RecordingFarm(FakeFarm):
        def score(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
            seen.extend(jobs)
            return [
                {
                    "id": jobs[0]["id"],
                    "env": "humaneval",
                    "status": "ok",
                    "code": 0,
                    "reward": 1.0,
                    "error": None,
                }
            ]

    monkeypatch.setattr(evalfarm.broker.farm, "Farm", RecordingFarm)
    job_file = tmp_path / "job.json"
    job_file.write_text(
        json.dumps({"prompt": "def add(a, b):\n", "test": "def check(f):\n    assert f(1, 2) == 3\n"})
    )
    trajectory = {"steps": [{"messages": [{"role": "assistant", "content": "    return a + b\n"}]}]}
    flags = (
        "--env",
        "humaneval",
        "--job",
        str(job_file),
        "--field",
        "entry_point=add",
        "--broker",
        "redis://x",
    )
    status, reward_path = run_verify(tmp_path, monkeypatch, {}, trajectory, *flags)
    assert status == 0
    assert seen[0]["completion"] == "    return a + b\n" and seen[0]["entry_point"] == "add"
    assert seen[0]["env"] == "humaneval" and "prompt" in seen[0]
    assert json.loads(reward_path.read_text())["normalized_score"] == 1.0
