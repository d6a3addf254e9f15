"""The farm's pieces that need no server: settings, Celery config, chunking, the batch, the task body."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import Any

import pytest

from evalfarm.broker.app import celery_config, transport_options
from evalfarm.broker.batch import Batch
from evalfarm.broker.chunking import plan_chunks
from evalfarm.broker.errors import ConfigError
from evalfarm.broker.settings import ClientSettings, Settings, WorkerSettings
from evalfarm.result import Result
from evalfarm.tasks.process import WorkerProcess
from evalfarm.workers.node import node_config
from evalfarm.workers.options import cpu_list


def settings(**values: Any) -> Settings:
    """Settings from `values` only (a plain constructor reads no environment)."""
    return Settings(**values)


# --- settings and the Celery configuration ---------------------------------------------------------


def test_settings_read_evalfarm_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALFARM_BROKER_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("EVALFARM_CONCURRENCY", "3")
    monkeypatch.setenv("EVALFARM_EXTRA_ENVS", json.dumps({"x": "mod:Cls"}))
    monkeypatch.setenv("EVALFARM_ENV_QUEUES", json.dumps({"weight_edits": "minatar", "call": "elm"}))
    assert Settings().broker_url is None  # a plain value: only `from_env` reads the environment
    loaded = Settings.from_env()
    assert loaded.broker_url == "redis://127.0.0.1:1/0"
    assert loaded.backend_url == loaded.broker_url
    assert loaded.concurrency == 3
    assert loaded.extra_envs == {"x": "mod:Cls"}
    assert loaded.queues == ["code", "minatar", "elm"]
    assert loaded.queue_for("call") == "elm" and loaded.queue_for("program") == "code"
    assert loaded.queue_for(None) == "code"
    # Each role reads only its own fields; the arguments win over the environment.
    assert WorkerSettings.from_env().concurrency == 3
    assert ClientSettings.from_env(farm_processes=5).farm_processes == 5
    assert not hasattr(ClientSettings.from_env(), "concurrency")
    given = ClientSettings.from_env({"EVALFARM_BROKER_URL": "redis://elsewhere:6379/1"})
    assert given.broker_url == "redis://elsewhere:6379/1"


def test_settings_name_a_field_that_is_no_setting_of_the_role() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        ClientSettings(concurrency=2)


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0)", "redis://127.0.0.1:63x79/0", "redis://h:6379/db"]
)
def test_a_malformed_broker_url_is_refused_at_once_with_the_reason(url: str) -> None:
    with pytest.raises(ValueError, match="broker_url"):
        ClientSettings(broker_url=url)
    with pytest.raises(ValueError, match="broker_url"):
        ClientSettings().with_broker(url)


@pytest.mark.parametrize(
    "values",
    [
        {"task_soft_time_limit_s": 10, "task_hard_time_limit_s": 10},
        {"task_hard_time_limit_s": 2000, "visibility_timeout_s": 1500},
        {"batch_deadline_s": 100_000, "result_expires_s": 50_000},
    ],
)
def test_settings_refuse_limits_that_run_a_task_twice_or_lose_results(values: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        settings(**values)


def test_celery_config_carries_the_reliability_settings() -> None:
    farm = settings(broker_url="redis://127.0.0.1:1/0", worker_lost_wait_s=1.5)
    config = celery_config(farm)
    node = node_config(farm)
    assert config["task_acks_late"] is True
    assert config["worker_prefetch_multiplier"] == 1
    assert config["task_reject_on_worker_lost"] is True and config["task_retry_on_worker_lost"] is True
    assert config["accept_content"] == ["json"] and config["task_serializer"] == "json"
    assert config["result_accept_content"] == ["json"]
    assert config["task_time_limit"] < transport_options(farm)["visibility_timeout"]
    assert config["task_soft_time_limit"] < config["task_time_limit"]
    assert config["result_expires"] > farm.batch_deadline_s
    assert node["worker_lost_wait"] == 1.5 and "worker_lost_wait" not in config
    assert config["broker_transport"] == "evalfarm.broker.transport:Transport"
    assert transport_options(farm)["health_check_interval"] == farm.health_check_interval_s
    queues = {q.name: q.routing_key for q in config["task_queues"]}
    assert queues == {"code": "code", "minatar": "minatar"}  # each queue its own route


def test_celery_config_needs_a_broker() -> None:
    with pytest.raises(ConfigError):
        celery_config(settings())


@pytest.fixture
def worker_process() -> Iterator[WorkerProcess]:
    """This process as a worker child, with no sandbox warmed, its context closed afterwards."""
    process = WorkerProcess(settings(warm_sandbox=False))
    yield process
    process.close()


def test_the_task_retry_bound_comes_from_settings() -> None:
    from evalfarm.broker.app import make_app
    from evalfarm.tasks import register

    farm = settings(broker_url="redis://127.0.0.1:1/0", worker_lost_retries=4, warm_sandbox=False)
    task = register(make_app(farm), WorkerProcess(farm))
    assert task.max_retries == 4 and task.default_retry_delay == 0


# --- chunking ------------------------------------------------------------------------------------------


def program_jobs(n: int) -> list[dict[str, object]]:
    return [{"id": f"p{i}", "env": "program", "code": f"x = {i}"} for i in range(n)]


@pytest.mark.parametrize("n_jobs", [2000, 4096, 50_000])
@pytest.mark.parametrize("processes", [2, 8, 64])
def test_chunks_keep_overhead_low_and_the_pool_busy(n_jobs: int, processes: int) -> None:
    farm = settings()
    jobs = program_jobs(n_jobs)
    chunks = plan_chunks(jobs, farm, processes)
    assert sorted(i for c in chunks for i in c.indices) == list(range(n_jobs))
    assert len(chunks) >= farm.messages_per_process * processes
    work = n_jobs * farm.job_cost_s("program")
    overhead = len(chunks) * farm.message_overhead_s
    if n_jobs * farm.job_cost_s("program") >= 4 * processes * 0.03:  # a batch big enough for both goals
        assert overhead / work < 0.10


def test_small_batches_favour_balance_and_expensive_jobs_ride_alone() -> None:
    farm = settings()
    assert len(plan_chunks(program_jobs(10), farm, 2)) == 10  # at least 4 per process: one job each
    edits = [{"id": f"w{i}", "env": "weight_edits"} for i in range(6)]
    chunks = plan_chunks(edits, farm, 2)
    assert [c.indices for c in chunks] == [(i,) for i in range(6)]
    assert {c.queue for c in chunks} == {"minatar"}


def test_chunks_follow_the_queues_and_the_size_cap() -> None:
    farm = settings(max_chunk_jobs=5)
    jobs = [*program_jobs(100), {"id": "w", "env": "weight_edits"}]
    chunks = plan_chunks(jobs, farm, 1)
    assert max(len(c.indices) for c in chunks) <= 5
    assert [c.indices for c in chunks if c.queue == "minatar"] == [(100,)]


# --- the batch: de-dup and infra marking --------------------------------------------------------------


def test_batch_sends_identical_jobs_once_and_answers_every_position() -> None:
    job = {"id": "a", "env": "program", "code": "pass"}
    other = {"id": "a", "env": "program", "code": "print(1)"}  # same id, different job: kept apart
    batch = Batch([job, dict(job), other, 7])
    assert batch.unique == [job, other, 7]
    batch.answer(
        [0, 1, 2], [{"id": "a", "status": "ok"}, {"id": "a", "status": "wrong_answer"}, {"id": None}]
    )
    answered = dict(batch.drain())
    assert sorted(answered) == [0, 1, 2, 3]
    assert answered[0]["status"] == answered[1]["status"] == "ok" and answered[0] is not answered[1]
    assert answered[2]["status"] == "wrong_answer"


def test_batch_keeps_the_first_answer_of_a_job_delivered_twice() -> None:
    batch = Batch(program_jobs(2))
    batch.answer([0, 1], [{"id": "p0", "status": "ok"}, {"id": "p1", "status": "ok"}])
    batch.answer([0], [{"id": "p0", "status": "timeout"}])
    batch.fail([1], "late failure")
    answered = dict(batch.drain())
    assert [answered[0]["status"], answered[1]["status"]] == ["ok", "ok"]
    assert batch.stats.duplicates == 2


def test_batch_turns_missing_or_mismatched_answers_into_infra_errors() -> None:
    batch = Batch(program_jobs(3))
    batch.answer([0, 1, 2], [{"id": "p0", "status": "ok"}, {"id": "zzz", "status": "ok"}])
    answered = dict(batch.drain())
    assert answered[0]["infra"] is False
    assert answered[1].is_infra and answered[2].is_infra
    assert batch.stats.infra_errors == 2


def test_infra_results_carry_no_reward_and_the_contract_code() -> None:
    result = Result.infra({"id": "x", "env": "program"}, "boom")
    assert isinstance(result, Result) and result.is_infra and result["infra"] is True
    assert result.reward is None and result["code"] == 6 and result.id == "x"


# --- the task body -------------------------------------------------------------------------------------


def test_malformed_messages_yield_what_jobs_they_hold() -> None:
    from evalfarm.tasks import jobs_of

    assert jobs_of(([{"id": "a"}],), {}, "t") == [{"id": "a"}]
    assert jobs_of((), {"jobs": [1]}, "t") == [1]
    assert jobs_of(({"id": "a"},), {}, "t") == [{"id": "a"}]
    assert jobs_of(("text",), {}, "t") == []
    assert jobs_of((), {}, "t") == []


def test_score_jobs_answers_bad_jobs_and_stamps_timing(worker_process: WorkerProcess) -> None:
    from evalfarm.tasks import score_jobs

    results = score_jobs([{"id": "a", "env": "nope"}, 5], worker_process, sent_at=0.0, attempt=2)
    assert [(r["id"], r["status"]) for r in results] == [("a", "invalid_job"), (None, "invalid_job")]
    assert all(r["attempt"] == 2 and r["queued_s"] > 0 and "run_s" in r for r in results)


def test_score_jobs_answers_the_rest_as_infra_error_past_the_soft_limit(
    monkeypatch: pytest.MonkeyPatch, worker_process: WorkerProcess
) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    import evalfarm.tasks.chunk

    calls = []

    def slow(job: object, ctx: object) -> Result:
        calls.append(job)
        if len(calls) == 2:
            raise SoftTimeLimitExceeded()
        return Result(id="j0", env="program", status="ok")

    monkeypatch.setattr(evalfarm.tasks.chunk, "score_job", slow)
    results = evalfarm.tasks.chunk.score_jobs(
        [{"id": f"j{i}", "env": "program"} for i in range(3)], worker_process
    )
    assert [r["status"] for r in results] == ["ok", "infra_error", "infra_error"]
    assert [r["id"] for r in results[1:]] == ["j1", "j2"]


# --- command-line helpers and import cost ------------------------------------------------------------


def test_cpu_lists_parse_like_taskset() -> None:
    assert cpu_list("0,2,4-6") == [0, 2, 4, 5, 6]
    with pytest.raises(argparse.ArgumentTypeError):
        cpu_list("a-b")


def test_node_plan_pins_children_round_robin_and_offsets_slots() -> None:
    from evalfarm.workers.node import plan_node

    plan = plan_node(settings(cpus=[0], concurrency=3, slot_base=10))
    assert [plan.cpu_of(i) for i in range(3)] == [0, 0, 0]
    assert [plan.slot_of(i) for i in range(3)] == [10, 11, 12]
    assert plan.queues == ("code", "minatar")
    with pytest.raises(ValueError):
        plan_node(settings(cpus=[10_000]))


# --- splitting long weight-edit grades ----------------------------------------------------------------


def weight_edit_job(episodes: int | None = 10) -> dict[str, object]:
    job: dict[str, object] = {"id": "w", "env": "weight_edits", "game": "freeway", "answer": "```edits\n```"}
    if episodes is not None:
        job["episodes"] = episodes
    return job


@pytest.mark.parametrize(("episodes", "per_part"), [(10, 3), (1000, 250), (7, 2), (None, 300)])
def test_client_parts_are_the_envs_own_parts(episodes: int | None, per_part: int) -> None:
    from evalfarm.broker.sharding import split_parts
    from evalfarm.envs.weight_edits import split_job

    job = weight_edit_job(episodes)
    parts = split_parts(job, per_part)
    assert parts is not None
    assert parts == split_job(job, len(parts))


def test_short_malformed_or_other_jobs_go_whole() -> None:
    from evalfarm.broker.sharding import split_parts

    assert split_parts(weight_edit_job(10), 10) is None
    assert split_parts(weight_edit_job(10), 0) is None
    assert split_parts({**weight_edit_job(10), "episodes": "many"}, 3) is None
    assert split_parts({**weight_edit_job(10), "episode_range": [0, 5]}, 3) is None
    assert split_parts({"id": "p", "env": "program", "episodes": 100}, 3) is None


def test_batch_merges_parts_once_all_are_in_and_fails_the_job_if_one_failed() -> None:
    other = weight_edit_job(10) | {"id": "v", "answer": "another answer"}
    batch = Batch([weight_edit_job(10), other, {"id": "p", "env": "program"}])
    batch.split(5)
    assert batch.sendable() == [2, 3, 4, 5, 6]
    assert batch.parts == {0: [3, 4], 1: [5, 6]}
    batch.answer([3, 5, 6], [{"id": "w#0-5", "status": "ok"}, {"id": "v#0-5", "status": "ok"}, None])
    assert batch.take_merges() == []  # w waits for its second part; v has a failed part
    failed = dict(batch.drain())
    assert list(failed) == [1] and failed[1].is_infra and "a part failed" in failed[1]["error"]
    batch.answer([4], [{"id": "w#5-10", "status": "ok"}])
    merges = batch.take_merges()
    assert [(index, [p["id"] for p in parts]) for index, parts in merges] == [(0, ["w#0-5", "w#5-10"])]
    batch.answer([0], [{"id": "w", "status": "ok", "reward": 0.5}])
    assert dict(batch.drain())[0]["reward"] == 0.5


def test_the_merge_task_body_answers_infra_error_when_parts_do_not_fit() -> None:
    from evalfarm.tasks.merge import merge

    result = merge(weight_edit_job(10), [{"id": "w#0-5", "status": "ok", "episode_range": [0, 5]}])
    assert result["status"] == "infra_error" and result["id"] == "w"
    assert merge({"id": "x", "env": "program"}, [])["status"] == "infra_error"


# --- the demo's batch and summary ---------------------------------------------------------------------


def test_the_demo_batch_follows_the_registered_envs() -> None:
    from evalfarm.workers.demo_jobs import demo_batch

    assert {job["env"] for job in demo_batch(["program"])} == {"program"}
    everything = demo_batch(["program", "humaneval", "codecontests", "call", "weight_edits", "other"])
    assert {job["env"] for job in everything} >= {"program", "codecontests", "call", "weight_edits"}
    assert len({job["id"] for job in everything}) == len(everything)


def test_the_demo_summary_counts_by_env_and_status_with_percentiles() -> None:
    from evalfarm.workers.commands.demo import percentile, summary

    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0 and percentile([1.0, 2.0, 3.0, 4.0], 99) == 4.0
    results = [
        {"env": "program", "status": "ok", "latency_s": 0.1, "run_s": 0.01},
        {"env": "program", "status": "ok", "latency_s": 0.3, "run_s": 0.02},
        {"env": "humaneval", "status": "infra_error", "latency_s": 0.2, "run_s": None},
    ]
    text = summary(results, 2.0, 2, 3)
    rows = [line.split() for line in text.splitlines()]
    assert ["program", "ok", "2"] in rows and ["humaneval", "infra_error", "1"] in rows
    assert "3 jobs in 2.00 s on 2 worker processes: 1.5 jobs/s" in text
    assert "p50 0.200 s, p99 0.300 s" in text and "infra errors: 1" in text
