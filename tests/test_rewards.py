"""The trainer adapters, deduplication, the result cache and the two example loops.

The adapters are called as their trainers call them: TRL's `reward_func(prompts=, completions=,
completion_ids=, trainer_state=, log_extra=, log_metric=, **columns)` (and by TRL's own GRPOTrainer
in tests/test_grpo.py), verl's batch `compute_score(data_sources=,
solution_strs=, ground_truths=, extra_infos=)` and its per-sample form. Against a real farm.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import chaos_support
import farm_support
import pytest
from farm_support import ROOT, client_settings, sleepy_jobs

from evalfarm.broker.errors import ConfigError
from evalfarm.broker.farm import Farm
from evalfarm.result import Result
from evalfarm.trainers.rewards import (
    answer_text,
    make_trl_reward,
    trl_jobs,
    verl_compute_score,
    verl_compute_score_one,
)

redis_server = farm_support.redis_server
workers = farm_support.workers
farm = farm_support.farm

PROBLEM = {
    "id": "add",
    "public_tests": [{"input": "2 2\n", "output": "4\n"}],
    "hidden_tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}],
}
RIGHT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
WRONG = "```python\nprint(0)\n```"
HEADER = "def add(a, b):\n"
TEST = "def check(candidate):\n    assert candidate(1, 2) == 3\n"


# -- no server ----------------------------------------------------------------------------------------


class SyncFarm:
    """A stand-in client whose results say what the test wants (the adapters' own logic, no farm)."""

    def __init__(self, statuses: dict[str, str]) -> None:
        self.statuses = statuses
        self.calls: list[dict[str, Any]] = []

    def score(self, jobs: list[dict[str, Any]], **options: Any) -> list[Result]:
        self.calls.append({"jobs": jobs, **options})
        results = []
        for job in jobs:
            status = self.statuses.get(job["completion"], "ok")
            reward = {"ok": 1.0, "wrong_answer": 0.0}.get(status)
            results.append(Result(id=job["id"], status=status, reward=reward, error=f"{status} here"))
        return results


class AsyncFarmLike(SyncFarm):
    async def score(self, jobs: list[dict[str, Any]], **options: Any) -> list[Result]:  # type: ignore[override]
        return super().score(jobs, **options)


def test_a_mistake_is_not_a_reward() -> None:
    # The farm's fault, the judge's, and the row's own malformed job: no reward (TRL masks None).
    farm = SyncFarm(
        {"a": "ok", "b": "wrong_answer", "c": "infra_error", "d": "judge_error", "e": "invalid_job"}
    )
    reward = make_trl_reward("humaneval", farm=farm)
    assert trl_call(reward, ["a", "b", "c", "d", "e"], {}, test=[TEST] * 5) == [1.0, 0.0, None, None, None]


def test_every_call_has_a_deadline_and_job_defaults_are_job_fields() -> None:
    farm = SyncFarm({})
    trl_call(make_trl_reward("humaneval", farm=farm), ["a"], {})
    trl_call(make_trl_reward("humaneval", farm=farm, deadline_s=2), ["a"], {})
    assert [call["deadline_s"] for call in farm.calls] == [300.0, 2.0]
    with pytest.raises(ConfigError, match="deadline: not a field of humaneval jobs"):
        make_trl_reward("humaneval", farm=farm, limits={"wall_s": 2}, deadline=2)  # not deadline_s
    with pytest.raises(ConfigError, match="timeout: not a field of codecontests jobs"):
        make_trl_reward("codecontests", farm=farm, timeout=5)
    with pytest.raises(ConfigError, match="deadline_s: a number of seconds"):
        make_trl_reward("humaneval", farm=farm, deadline_s=0)
    make_trl_reward("codecontests", farm=farm, reward_shape="fraction_passed", language="cpp", limits={})


def test_a_sync_farm_serves_an_async_reward_and_an_async_farm_no_sync_one() -> None:
    farm = SyncFarm({"b": "wrong_answer"})
    reward = make_trl_reward("humaneval", farm=farm, asynchronous=True)
    rewards = asyncio.run(reward(prompts=[HEADER] * 2, completions=["a", "b"], test=[TEST] * 2))
    assert rewards == [1.0, 0.0] and farm.calls[0]["deadline_s"] == 300.0
    with pytest.raises(ConfigError, match="pass asynchronous=True"):
        make_trl_reward("humaneval", farm=AsyncFarmLike({}))
    assert asyncio.run(make_trl_reward("humaneval", farm=AsyncFarmLike({}), asynchronous=True)(
        prompts=[HEADER], completions=["a"], test=[TEST]
    )) == [1.0]  # fmt: skip


def test_a_none_column_is_a_field_not_given() -> None:
    # `datasets` fills a key a row lacks with None: that is the key absent, not a value.
    [job] = trl_jobs("codecontests", ["q"], [RIGHT], {"problem": [None], "problem_id": ["p1"]}, {})
    assert "problem" not in job and job["problem_id"] == "p1"


def test_the_answer_of_a_plain_or_conversational_completion() -> None:
    assert answer_text("x = 1") == "x = 1"
    assert answer_text([{"role": "assistant", "content": "done"}]) == "done"
    chat = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"text": "b"}]},
    ]
    assert answer_text(chat) == "a\nb"
    assert (
        answer_text([{"role": "user", "content": "only a question"}])
        == "[{'role': 'user', 'content': 'only a question'}]"
    )


def test_trl_columns_become_job_fields_per_env() -> None:
    [job] = trl_jobs(
        "humaneval", [HEADER], ["    return a + b\n"], {"test": [TEST], "entry_point": ["add"], "x": [1]}, {}
    )
    assert job == {
        "env": "humaneval",
        "id": "trl-0",
        "prompt": HEADER,
        "completion": "    return a + b\n",
        "test": TEST,
        "entry_point": "add",
    }
    chat_prompt = [[{"role": "user", "content": "write add"}]]
    [job] = trl_jobs(
        "humaneval",
        chat_prompt,
        [[{"role": "assistant", "content": "body"}]],
        {"humaneval_prompt": [HEADER], "test": [TEST], "entry_point": ["add"]},
        {},
    )
    assert job["prompt"] == HEADER and job["completion"] == "body"
    [job] = trl_jobs(
        "codecontests", ["p"], [RIGHT], {"problem": [PROBLEM]}, {"reward_shape": "fraction_passed"}
    )
    assert (job["problem"], job["completion"], job["reward_shape"]) == (PROBLEM, RIGHT, "fraction_passed")
    [job] = trl_jobs("weight_edits", ["p"], ["answer"], {"game": ["breakout"], "episodes": [4]}, {})
    assert (job["game"], job["episodes"], job["answer"]) == ("breakout", 4, "answer")
    mixed = trl_jobs(
        "codecontests",
        ["a", "b"],
        [RIGHT, "x"],
        {"env": ["codecontests", "humaneval"], "problem": [PROBLEM, None]},
        {},
    )
    assert mixed[0]["env"] == "codecontests" and mixed[1] == {}  # another env's row: no job


# -- TRL ------------------------------------------------------------------------------------------------


def trl_call(reward: Any, completions: list[Any], logged: dict[str, Any], **columns: Any) -> Any:
    """A call as TRL's GRPOTrainer makes it (>= 1.0): keywords only, its own extras included."""
    return reward(
        prompts=[HEADER] * len(completions),
        completions=completions,
        completion_ids=[[1, 2, 3]] * len(completions),
        trainer_state=None,
        log_extra=lambda column, values: logged.setdefault("extra", {}).__setitem__(column, values),
        log_metric=lambda name, value: logged.setdefault("metric", {}).__setitem__(name, value),
        **columns,
    )


@pytest.mark.integration
def test_trl_reward_functions_sync_and_async(redis_server, workers) -> None:
    workers.start()
    completions = ["    return a + b\n", "    return a - b\n", "    return a + b\n"]
    columns = {"test": [TEST] * 3, "entry_point": ["add"] * 3}
    logged: dict[str, Any] = {}
    reward = make_trl_reward("humaneval", broker_url=redis_server.url)
    assert reward.__name__ == "evalfarm_humaneval"
    assert trl_call(reward, completions, logged, **columns) == [1.0, 0.0, 1.0]
    assert logged["extra"] == {"evalfarm_humaneval_status": ["ok", "wrong_answer", "ok"]}
    assert logged["metric"] == {"evalfarm/humaneval/masked": 0.0, "evalfarm/humaneval/infra_masked": 0.0}
    assert reward.last_results[2]["duplicate_of"] == "trl-0"  # the third is the first again: one run

    cc = make_trl_reward(
        "codecontests", broker_url=redis_server.url, asynchronous=True, reward_shape="fraction_passed"
    )
    he = make_trl_reward("humaneval", broker_url=redis_server.url, asynchronous=True)
    assert asyncio.iscoroutinefunction(cc)

    async def trl_awaits_them_together() -> list[Any]:
        chats = [[{"role": "assistant", "content": RIGHT}], [{"role": "assistant", "content": WRONG}]]
        return list(
            await asyncio.gather(
                trl_call(cc, chats, {}, problem=[PROBLEM, PROBLEM]),
                trl_call(he, completions[:2], {}, **{k: v[:2] for k, v in columns.items()}),
            )
        )

    assert asyncio.run(trl_awaits_them_together()) == [[1.0, 0.0], [1.0, 0.0]]


@pytest.mark.integration
def test_an_infra_failure_is_none_for_trl_and_flagged_for_verl(
    redis_server, workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = workers.start()
    monkeypatch.setenv("EVALFARM_BROKER_URL", redis_server.url)  # where verl's reward finds the farm
    slow = "    import time\n    time.sleep(2)\n    return a + b\n"
    reward = make_trl_reward("humaneval", broker_url=redis_server.url)
    assert node.proc is not None
    with chaos_support.killing_runs_older_than(0.5, node.proc.pid):  # every try of the slow one dies
        rewards = trl_call(reward, ["    return a + b\n", slow], {}, test=[TEST] * 2, entry_point=["add"] * 2)
        assert rewards == [1.0, None]
        truth = {"env": "humaneval", "prompt": HEADER, "test": TEST, "entry_point": "add"}
        scores = verl_compute_score(
            ["humaneval"] * 2, ["    return a + b\n", slow], [truth, json.dumps(truth)], [None, None]
        )
    assert [(s["score"], s["status"], s["infra_error"], s["masked"]) for s in scores] == [
        (1.0, "ok", False, False),
        (0.0, "infra_error", True, True),
    ]


@pytest.mark.integration
def test_verl_compute_score_batch_and_per_sample(
    redis_server, workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    workers.start()
    monkeypatch.setenv("EVALFARM_BROKER_URL", redis_server.url)  # where verl's reward finds the farm
    truth = {"problem": PROBLEM, "reward_shape": "fraction_passed"}  # no env: the data source names it
    scores = verl_compute_score(
        data_sources=["codecontests", "codecontests", "codecontests"],
        solution_strs=[RIGHT, WRONG, RIGHT],
        ground_truths=[truth, json.dumps(truth), "not json"],
        extra_infos=[{}, {}, {}],
    )
    assert [(s["score"], s["status"], s["passed"], s["total"]) for s in scores[:2]] == [
        (1.0, "ok", 2, 2),
        (0.0, "wrong_answer", 0, 2),
    ]
    assert (
        scores[2]["status"] == "invalid_job"
        and not scores[2]["infra_error"]
        and "ground truth" in scores[2]["error"]
    )
    one = verl_compute_score_one("codecontests", RIGHT, truth, None)
    assert set(one) == {"score", "status", "masked", "infra_error", "error", "passed", "total"}
    assert one["score"] == 1.0 and one["masked"] is False
    assert scores[2]["masked"] is True


@pytest.mark.integration
def test_identical_jobs_run_once_and_each_gets_its_own_answer(redis_server, workers, tmp_path: Path) -> None:
    workers.start()
    log = str(tmp_path / "runs.log")
    same = {"env": "sleepy", "sleep_s": 0.01, "value": "v", "runs_log": log}
    jobs = [{"id": f"dup{i}", **same} for i in range(6)] + [
        {**j, "runs_log": log} for j in sleepy_jobs(2, 0.01)
    ]
    with Farm(settings=client_settings(redis_server.url), progress=False) as client:
        results = client.score(jobs)
        assert [r["id"] for r in results] == [j["id"] for j in jobs]
        assert [r.get("duplicate_of") for r in results[:6]] == [None, *["dup0"] * 5]
        assert client.last_stats.deduplicated == 5
    assert sorted(Path(log).read_text().split()) == ["dup0", "s0", "s1"]  # three runs for eight jobs
    with Farm(settings=client_settings(redis_server.url, deduplicate=False), progress=False) as client:
        assert all("duplicate_of" not in r for r in client.score(jobs[:3]))
    assert len(Path(log).read_text().split()) == 6


@pytest.mark.integration
def test_the_result_cache_answers_a_job_seen_before(redis_server, workers, tmp_path: Path) -> None:
    workers.start(EVALFARM_RESULT_CACHE_TTL_S="60")
    log = str(tmp_path / "runs.log")
    jobs = [{"id": f"c{i}", "env": "sleepy", "sleep_s": 0.01, "value": i, "runs_log": log} for i in range(3)]
    with Farm(settings=client_settings(redis_server.url), progress=False) as client:
        first = client.score(jobs)
        again = client.score([{**j, "id": f"again-{j['id']}"} for j in jobs])
    assert [r.get("cached") for r in first] == [None] * 3 and [r.get("cached") for r in again] == [True] * 3
    assert [r["id"] for r in again] == ["again-c0", "again-c1", "again-c2"] and [
        r["value"] for r in again
    ] == [0, 1, 2]
    assert len(Path(log).read_text().split()) == 3  # the second batch ran nothing


# -- the examples -----------------------------------------------------------------------------------------


def example(name: str, *args: str) -> dict[str, Any]:
    command = [sys.executable, str(ROOT / "examples" / name), "--json", *args]
    completed = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=300, env=farm_support.worker_env()
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])


@pytest.mark.integration
@pytest.mark.slow
def test_the_grpo_scoring_example_runs_a_step() -> None:
    totals = example("grpo_scoring.py", "--prompts", "4", "--group", "6")
    assert totals["completions"] == 24 and totals["masked"] == 0
    assert 0 < totals["runs"] < 24  # duplicated completions were scored once


@pytest.mark.integration
@pytest.mark.slow
def test_the_map_elites_example_fills_an_archive(tmp_path: Path) -> None:
    plot = tmp_path / "archive.png"
    final = example("map_elites.py", "--generations", "3", "--batch", "16", "--plot", str(plot))
    assert final["elites"] > 0 and 0 < final["coverage"] <= 1 and final["best"] > 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.integration
@pytest.mark.slow
def test_the_agent_sessions_example_runs_its_rollouts() -> None:
    """Every rollout's session kept its state through a raising turn and an interrupted one, and
    every final answer earned its reward from a job."""
    outcome = example("agent_sessions.py", "--rollouts", "8")
    assert outcome["rewards"] == [1.0] * 8
    assert outcome["turns"] == [["ok", "ok", "ok", "runtime_error", "timeout", "ok"]] * 8
