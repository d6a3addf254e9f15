"""A batch's decisions about faults, without a server: what is published again, rescored, or failed."""

from __future__ import annotations

import time
from typing import Any

from evalfarm.broker.batch import Batch
from evalfarm.broker.run import MERGE_PARTS, SCORE_CHUNK, BatchRun, Outgoing
from evalfarm.broker.settings import Settings
from evalfarm.result import INFRA_STATUS


def settings(**values: Any) -> Settings:
    """Settings from `values` only, whatever EVALFARM_* the test process has."""
    return Settings(**values)


def make_run(jobs: list[Any], deadline_s: float = 60.0, **values: Any) -> BatchRun:
    """A planned run of `jobs` (one chunk per queue, unless the values say otherwise)."""
    values.setdefault("messages_per_process", 1)
    batch = Batch(jobs)
    batch.split(settings(**values).episodes_per_part)
    run = BatchRun(batch, settings(**values), time.monotonic() + deadline_s, lambda job: 0.01, lambda _: None)
    run.plan(processes=1)
    return run


def jobs(n: int) -> list[dict[str, Any]]:
    return [{"id": f"j{i}", "env": "program", "code": f"print({i})"} for i in range(n)]


def ok(job: dict[str, Any]) -> dict[str, Any]:
    return {"id": job["id"], "env": job["env"], "status": "ok", "code": 0, "reward": None}


def infra(job: dict[str, Any]) -> dict[str, Any]:
    return {**ok(job), "status": INFRA_STATUS, "code": 6, "error": "sandbox failure"}


def publish_all(run: BatchRun, now: float | None = None) -> list[tuple[str, Outgoing]]:
    sent = []
    for n, outgoing in enumerate(run.due(now)):
        task_id = f"t{len(run.pending)}-{n}-{time.monotonic_ns()}"
        run.published(task_id, outgoing)
        sent.append((task_id, outgoing))
    return sent


def reply(task_id: str, results: Any, status: str = "SUCCESS") -> dict[str, Any]:
    return {"task_id": task_id, "status": status, "result": results}


def lost(task_id: str) -> dict[str, Any]:
    error = {"exc_type": "WorkerLostError", "exc_message": ["Worker exited prematurely: signal 9"]}
    return reply(task_id, error, "FAILURE")


def settled(run: BatchRun) -> dict[int, dict[str, Any]]:
    return dict(run.drain())


def test_every_chunk_is_due_at_once_and_the_run_ends_when_all_are_answered() -> None:
    batch = jobs(6)
    run = make_run(batch, messages_per_process=3)
    sent = publish_all(run)
    assert sent and all(outgoing.task == SCORE_CHUNK for _, outgoing in sent)
    for task_id, outgoing in sent:
        run.on_reply(reply(task_id, [ok(batch[i]) for i in outgoing.chunk.indices]))
    assert sorted(settled(run)) == list(range(6)) and run.finished


def test_an_infra_error_answer_is_sent_again_and_its_second_answer_counts() -> None:
    batch = jobs(3)
    run = make_run(batch)
    [(task_id, _)] = publish_all(run)
    run.on_reply(reply(task_id, [ok(batch[0]), infra(batch[1]), ok(batch[2])]))
    assert sorted(settled(run)) == [0, 2]  # the infra answer is held back
    assert not run.finished and run.due() == []  # not before its backoff
    [(again_id, again)] = publish_all(run, now=time.monotonic() + 10)
    assert again.chunk.indices == (1,)
    run.on_reply(reply(again_id, [ok(batch[1])]))
    assert settled(run)[1]["status"] == "ok" and run.finished
    assert run.batch.stats.retried_jobs == 1


def test_a_job_answered_infra_error_every_time_ends_infra_error_after_the_bound() -> None:
    batch = jobs(1)
    run = make_run(batch, job_retries=2)
    answers = 0
    while not run.finished:
        for task_id, _ in publish_all(run, now=time.monotonic() + 60):
            run.on_reply(reply(task_id, [infra(batch[0])]))
            answers += 1
    assert answers == 3  # the first try and two more
    [result] = settled(run).values()
    assert result["status"] == INFRA_STATUS and result["infra"] is True and result["reward"] is None


def test_no_retry_is_planned_past_the_deadline() -> None:
    batch = jobs(1)
    run = make_run(batch, deadline_s=0.1)
    [(task_id, _)] = publish_all(run)
    run.on_reply(reply(task_id, [infra(batch[0])]))
    assert settled(run)[0]["status"] == INFRA_STATUS and run.finished


def test_a_chunk_whose_worker_died_is_rescored_job_by_job_then_only_the_killer_fails() -> None:
    batch = jobs(3)
    run = make_run(batch)
    [(task_id, _)] = publish_all(run)
    run.on_reply(lost(task_id))
    singles = publish_all(run)
    assert sorted(o.chunk.indices for _, o in singles) == [(0,), (1,), (2,)]
    for single_id, outgoing in singles:
        index = outgoing.chunk.indices[0]
        run.on_reply(lost(single_id) if index == 1 else reply(single_id, [ok(batch[index])]))
    results = settled(run)
    assert [results[i]["status"] for i in range(3)] == ["ok", INFRA_STATUS, "ok"]
    assert "WorkerLostError" in results[1]["error"] and run.finished


def test_a_chunk_that_could_not_be_published_is_published_again_with_backoff() -> None:
    run = make_run(jobs(2))
    [outgoing] = run.due()
    run.publish_failed(outgoing, "publish failed: ConnectionError")
    assert run.due() == [] and 0 < run.wait_s() <= 0.2 + 1e-6
    [again] = run.due(now=time.monotonic() + 1)
    assert again == outgoing and not run.batch.stats.infra_errors


def test_at_the_deadline_unpublished_work_says_the_farm_was_unreachable() -> None:
    run = make_run(jobs(2))
    [outgoing] = run.due()
    run.publish_failed(outgoing, "publish failed: ConnectionError: refused")
    run.expire()
    results = settled(run)
    assert all(r["status"] == INFRA_STATUS for r in results.values())
    assert "could not be reached: publish failed: ConnectionError" in results[0]["error"]
    assert run.finished and run.abandoned() == []


def test_expired_tasks_are_handed_out_once_for_revocation() -> None:
    run = make_run(jobs(2))
    [(task_id, _)] = publish_all(run)
    run.expire()
    assert run.finished and run.abandoned() == [task_id] and run.abandoned() == []


def test_a_reply_for_a_task_not_pending_is_ignored() -> None:
    batch = jobs(1)
    run = make_run(batch)
    [(task_id, _)] = publish_all(run)
    run.on_reply(reply("someone-else", [ok(batch[0])]))
    run.on_reply({"no": "task id"})
    run.on_reply("not even a dict")
    assert settled(run) == {} and not run.finished
    run.on_reply(reply(task_id, [ok(batch[0])]))
    run.on_reply(reply(task_id, [ok(batch[0])]))  # delivered twice
    assert list(settled(run)) == [0] and run.finished


def test_split_parts_merge_on_a_worker_and_a_failed_merge_is_tried_again() -> None:
    job = {"id": "w", "env": "weight_edits", "game": "breakout", "answer": "", "episodes": 4}
    run = make_run([job], episodes_per_part=2)
    parts = publish_all(run)
    for task_id, outgoing in parts:
        answers = [{**ok(run.batch.unique[i]), "env": "weight_edits"} for i in outgoing.chunk.indices]
        run.on_reply(reply(task_id, answers))
    [(merge_id, merge)] = publish_all(run)
    assert merge.task == MERGE_PARTS and merge.merge
    run.on_reply(reply(merge_id, {**infra(job), "error": "merge failed"}))
    [(again_id, again)] = publish_all(run, now=time.monotonic() + 10)
    assert again == merge
    run.on_reply(reply(again_id, {**ok(job), "env": "weight_edits"}))
    assert settled(run)[0]["status"] == "ok" and run.finished


def test_after_redis_trouble_every_pending_task_is_looked_for_soon_then_as_usual() -> None:
    """A failover to a replica may lose what was written last (a task, a reply): after trouble,
    every pending task is audited within seconds (twice, the rule of two in a row), not only the
    tasks pending for `lost_task_audit_s`."""
    run = make_run(jobs(3), lost_task_audit_s=30.0)
    [(task_id, _)] = publish_all(run)
    now = time.monotonic()
    assert run.audit_due(now) == []  # published just now: not due for 30 s
    run.broker_trouble(now)
    assert run.audit_due(now + 1.0) == []
    assert run.audit_due(now + 3.5) == [task_id]
    run.audited([task_id], None)  # Redis could not tell (queues busy): it asks again soon
    assert run.audit_due(now + 7.0) == [task_id]
    run.audited([task_id], set())  # missing once
    assert run.audit_due(now + 10.5) == [task_id]
    run.audited([task_id], set())  # missing twice: published again
    assert run.pending == {} and [o.chunk.indices for o in run.due(time.monotonic() + 60)] == [(0, 1, 2)]
    assert run.audit_due(now + 14.0) == []  # back to every 30 s
