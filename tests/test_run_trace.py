"""A slot that traces its runs (`SandboxConfig.trace`, what bench/bench_profile.py reads) stamps each
step of a run on one clock, in the order the steps happen; a slot that does not, stamps nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalfarm.sandbox import JudgeSpec, Sandbox, SandboxConfig, Status

pytestmark = pytest.mark.sandbox

PLAIN = [
    "client_sent", "server_received", "candidate_forked", "child_entered", "child_walled",
    "program_started", "candidate_ended", "supervised", "server_replied", "client_received",
]  # fmt: skip


@pytest.fixture(scope="module")
def traced() -> Iterator[Sandbox]:
    with Sandbox(slot=930, config=SandboxConfig(trace=True)) as box:
        yield box


def test_a_traced_run_stamps_its_steps_in_order(traced: Sandbox) -> None:
    run = traced.run("print(input())", stdin="x\n")
    assert run.status is Status.OK and run.stdout == b"x\n"
    trace = run.trace or {}
    assert [trace[step] for step in PLAIN] == sorted(trace[step] for step in PLAIN)


def test_a_traced_judged_run_stamps_the_judges_steps_too(traced: Sandbox) -> None:
    judge = "f = candidate.function('f')\nassert f() == 1\nreport({'status': 'ok'})\n"
    run = traced.run_judged("def f():\n    return 1\n", JudgeSpec(judge))
    assert run.status is Status.OK
    trace = run.trace or {}
    assert trace["client_sent"] < trace["judge_received"] < trace["judge_done"] < trace["client_received"]
    assert trace["program_started"] < trace["judge_done"]  # the judge called the serving candidate


def test_a_slot_that_does_not_trace_stamps_nothing() -> None:
    with Sandbox(slot=931) as box:
        run = box.run("pass")
    assert run.status is Status.OK and run.trace is None
