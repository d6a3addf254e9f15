"""The weight_edits env against golden values of the reference grader (seed 004), bit for bit."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.registry import get_env
from evalfarm.envs.scoring import score_job
from evalfarm.envs.weight_edits import MAX_ANSWER_CHARS, MAX_EPISODES, grade_answer, merge_results, split_job

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "weight_edits_golden.json").read_text())
CASES = {case["name"]: case for case in GOLDEN["cases"]}
# ast's messages for non-literals name a node by its memory address, which differs between runs.
ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def normalized(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata with node addresses masked in the error text."""
    if "error" not in metadata:
        return metadata
    return {**metadata, "error": ADDRESS.sub(" at 0x…", metadata["error"])}


def params(slow: bool) -> list[Any]:
    """Golden cases as pytest params: those that play MinAtar marked, long ones also slow."""
    chosen = []
    for name, case in CASES.items():
        played = case["metadata"]["parse_success"] == 1.0
        if (case["episodes"] >= 50) != slow:
            continue
        marks = [pytest.mark.minatar] if played else []
        if slow:
            marks.append(pytest.mark.slow)
        chosen.append(pytest.param(case, id=name, marks=marks))
    return chosen


def job(case: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": case["name"],
        "env": "weight_edits",
        "game": case["game"],
        "answer": case["answer"],
        "episodes": case["episodes"],
        **fields,
    }


def test_golden_corpus_covers_every_game_and_parse_error() -> None:
    games = {case["game"] for case in CASES.values()}
    errors = {case["metadata"]["error"] for case in CASES.values() if "error" in case["metadata"]}
    assert len(CASES) >= 30 and len(games) == 5
    for text in [
        "answer has no edits block",
        "unknown tensor",
        "edit target must index a named tensor",
        "only *=, +=, and -= augmented edits are allowed",
        "edits may contain only assignments",
        "out of bounds",
        "could not broadcast",
        "was never closed",
        "weights must be finite and have absolute value at most 1e6",
    ]:
        assert any(text in error for error in errors), text
    assert CASES["freeway_up_100"]["reward"] > 0.2  # a policy that scores well


@pytest.mark.parametrize("case", params(slow=False))
def test_grade_answer_equals_the_reference(case: dict[str, Any]) -> None:
    reward, metadata = grade_answer(case["game"], "original", case["answer"], case["episodes"])
    assert reward == case["reward"] and repr(reward) == repr(case["reward"])
    assert normalized(metadata) == normalized(case["metadata"])
    assert list(metadata) == list(case["metadata"])  # same keys, same order


@pytest.mark.parametrize("case", params(slow=True))
def test_grade_answer_equals_the_reference_long(case: dict[str, Any]) -> None:
    reward, metadata = grade_answer(case["game"], "original", case["answer"], case["episodes"])
    assert reward == case["reward"]
    assert metadata == case["metadata"]


@pytest.mark.parametrize("case", params(slow=False))
def test_env_result_carries_the_reference_values(case: dict[str, Any]) -> None:
    result = score_job(job(case), Context())
    parsed = case["metadata"]["parse_success"] == 1.0
    assert (result["status"], result["code"]) == (("ok", 0) if parsed else ("parse_error", 9))
    assert result["reward"] == case["reward"]
    assert normalized(result["metadata"]) == normalized(case["metadata"])
    assert result["error"] == (None if parsed else result["metadata"]["error"])
    assert result["env_version"] and json.loads(json.dumps(result)) == result


@pytest.mark.minatar
@pytest.mark.parametrize(
    "name", ["freeway_chicken_rows", "asterix_dodge", "seaquest_enemies", "index_conversions"]
)
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_split_and_merge_equal_the_whole_job(name: str, parts: int) -> None:
    whole_job = job(CASES[name])
    whole = score_job(whole_job, Context())
    sub_jobs = split_job(whole_job, parts)
    assert len(sub_jobs) == min(parts, whole_job["episodes"])
    ranges = [sub_job["episode_range"] for sub_job in sub_jobs]
    assert ranges[0][0] == 0 and ranges[-1][1] == whole_job["episodes"]
    assert all(left[1] == right[0] for left, right in itertools.pairwise(ranges))
    results = [score_job(sub_job, Context()) for sub_job in sub_jobs]
    assert all(
        len(result["episode_scores"]) == stop - start
        for result, (start, stop) in zip(results, ranges, strict=True)
    )
    merged = merge_results(whole_job, list(reversed(results)))  # order of arrival must not matter
    for key in ("id", "env", "status", "code", "reward", "error", "metadata", "env_version", "limits"):
        assert merged[key] == whole[key], key


def test_split_of_a_parse_error_merges_to_the_whole_result() -> None:
    whole_job = job(CASES["error_shape_mismatch"])
    whole = score_job(whole_job, Context())
    results = [score_job(sub_job, Context()) for sub_job in split_job(whole_job, 4)]
    merged = merge_results(whole_job, results)
    for key in ("id", "status", "code", "reward", "error", "metadata"):
        assert merged[key] == whole[key], key


def test_split_of_an_invalid_job_is_the_job_itself() -> None:
    bad = {"id": "bad", "env": "weight_edits", "game": "pong", "answer": ""}
    assert split_job(bad, 4) == [bad]
    result = score_job(bad, Context())
    assert merge_results(bad, [result]) == result


def test_merge_rejects_parts_that_do_not_cover_the_episodes() -> None:
    whole_job = job(CASES["breakout_zero"])
    parts = [
        {"status": "ok", "episode_range": [0, 4], "episode_scores": [0.0] * 4, "episode_lengths": [1] * 4},
        {"status": "ok", "episode_range": [5, 10], "episode_scores": [0.0] * 5, "episode_lengths": [1] * 5},
    ]
    with pytest.raises(ValueError, match="cover"):
        merge_results(whole_job, parts)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"game": "pong"}, "game"),
        ({"game": None}, "game"),
        ({"answer": None}, "answer"),
        ({"answer": "x" * (MAX_ANSWER_CHARS + 1)}, "answer"),
        ({"episodes": 0}, "episodes"),
        ({"episodes": -5}, "episodes"),
        ({"episodes": MAX_EPISODES + 1}, "episodes"),
        ({"episodes": 2.0}, "episodes"),
        ({"episodes": True}, "episodes"),
        ({"episodes": "10"}, "episodes"),
        ({"source": "atari"}, "source"),
        ({"source": "synth"}, "source"),
        ({"episode_range": [3, 3]}, "episode_range"),
        ({"episode_range": [0, 11]}, "episode_range"),
        ({"episode_range": [-1, 2]}, "episode_range"),
        ({"episode_range": "0-5"}, "episode_range"),
    ],
)
def test_invalid_jobs_name_their_field(change: dict[str, Any], field: str) -> None:
    result = score_job(job(CASES["breakout_zero"]) | change, Context())
    assert (result["status"], result["code"], result["reward"]) == ("invalid_job", 10, None)
    assert result["error"].startswith(f"{field}: "), result["error"]


def test_synth_without_its_package_says_so() -> None:
    result = score_job(job(CASES["breakout_zero"], source="synth"), Context())
    assert result["status"] == "invalid_job" and "minatar_synth" in result["error"]


@pytest.mark.minatar
@pytest.mark.parametrize("limit", ["wall_s", "cpu_s"])
@pytest.mark.parametrize("game", ["freeway", "space_invaders"])
def test_a_grade_past_its_limit_times_out(limit: str, game: str) -> None:
    # 10,000 episodes take seconds even on the compiled loop: far past a limit of 0.05 s.
    heavy = job(CASES["freeway_dense"], game=game, episodes=MAX_EPISODES, limits={limit: 0.05})
    get_env("weight_edits")  # built (and its loop compiled) before the clock starts
    started = time.monotonic()
    result = score_job(heavy, Context())
    assert time.monotonic() - started < 5.0
    assert (result["status"], result["code"], result["reward"]) == ("timeout", 2, 0.0)
    assert limit.split("_")[0] in result["error"].lower().replace("wall-clock", "wall")


@pytest.mark.parametrize(
    "body",
    [
        "b1[0] = " + "-" * 20_000 + "1",
        "b1[0] = " + "1+" * 20_000 + "1",
        "b1[" + "(" * 500 + "0" + ")" * 500 + "] = 1",
    ],
)
def test_answers_past_the_parsers_limits_are_parse_errors(body: str) -> None:
    # The reference crashes on these; here they are a parse error with a message, never a crash.
    result = score_job(
        {"id": "deep", "env": "weight_edits", "game": "breakout", "answer": f"```edits\n{body}\n```"},
        Context(),
    )
    assert (result["status"], result["reward"], result["metadata"]["parse_success"]) == (
        "parse_error",
        0.0,
        0.0,
    )
    assert result["error"] and result["error"] == result["metadata"]["error"]


def test_envs_import_no_queue_or_metrics_code() -> None:
    script = (
        "import sys, envs.weight_edits\n"
        "print([m for m in ('celery', 'redis', 'kombu', 'prometheus_client') if m in sys.modules])"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


SYNTH_GAME = '''
import numpy as np
from minatar import Environment

GROUPS = {groups!r}


class BreakoutEnvironment:
    """MinAtar's breakout behind the synth interface, observed as the original source is."""

    score_cap = 1000

    def __init__(self, sticky_action_prob):
        self.inner = Environment("breakout", sticky_action_prob=sticky_action_prob, difficulty_ramping=False)

    def seed(self, seed):
        self.inner.seed(seed)

    def reset(self):
        self.inner.reset()

    def act(self, action):
        return self.inner.act(action)

    def state(self):
        raw = self.inner.state()
        merged = np.zeros((10, 10, 6), dtype=bool)
        for channel, sources in enumerate(GROUPS):
            if sources:
                merged[:, :, channel] = np.any(raw[:, :, sources], axis=2)
        return merged
'''


@pytest.mark.minatar
def test_synth_source_grades_through_an_installed_minatar_synth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    from evalfarm.envs.weight_edits.games import ORIGINAL_CHANNEL_GROUPS

    package = tmp_path / "minatar_synth" / "games"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "breakout.py").write_text(SYNTH_GAME.format(groups=ORIGINAL_CHANNEL_GROUPS["breakout"]))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    case = CASES["breakout_track"]
    try:
        result = score_job(job(case, source="synth"), Context())
    finally:
        for name in [module for module in sys.modules if module.startswith("minatar_synth")]:
            del sys.modules[name]
    # The same game and observation through the synth interface: the original's values.
    assert result["status"] == "ok" and result["reward"] == case["reward"]
    assert result["metadata"] == {**case["metadata"], "source": "synth"}
