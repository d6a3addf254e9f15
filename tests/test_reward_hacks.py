"""The reward-hack corpus (tests/hacks/): every hack earns no reward and the status an honest judge
gives it; every control keeps its verdict; as root, and as an unprivileged user."""

from __future__ import annotations

import collections
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import hack_corpus
import pytest
import unprivileged

from evalfarm.envs import Context

pytestmark = pytest.mark.sandbox
CASES = hack_corpus.load_cases()
BY_NAME = {case.name: case for case in CASES}
SECRET = secrets.token_hex(16)


def test_the_corpus_covers_every_family() -> None:
    families = collections.Counter(case.family for case in CASES)
    folders = {path.name for path in hack_corpus.HACKS.iterdir() if path.is_dir()} - {"problems"}
    assert set(families) == folders  # every family folder holds cases
    earlier = {
        "controls", "early_exit", "forged_verdict", "equality_override", "monkeypatching",
        "test_tampering", "oracle_peeking", "cross_job", "penalty_dodge", "stdout_tricks", "cpp", "elm_gate",
        "judge_peeking", "number_syntax",
    }  # fmt: skip
    assert earlier <= set(families)
    assert all(count >= 3 for count in families.values()), families
    assert {case.env for case in CASES} == {"humaneval", "codecontests", "call", "elm", "program"}
    assert all(BY_NAME[case.after].is_control for case in CASES if case.after)


@pytest.fixture(scope="module")
def ctx() -> Iterator[Context]:
    context = Context(slot=931)
    yield context
    after = context.sandbox.run("print(6 * 7)")
    assert (after.status.value, after.stdout) == ("ok", b"42\n")
    context.close()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hack_earns_nothing_and_a_control_keeps_its_verdict(ctx: Context, case: hack_corpus.Case) -> None:
    result, problems = hack_corpus.score_case(ctx, case, BY_NAME, SECRET)
    assert problems == [], (
        f"{case.name}: {result['status']} {result.get('error')} {result.get('stdout', '')[-300:]!r}"
    )


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="creating the unprivileged user needs root")
def test_the_corpus_as_an_unprivileged_user() -> None:
    script = str(Path(hack_corpus.__file__))
    completed = subprocess.run(
        unprivileged.command([sys.executable, script]),
        capture_output=True,
        text=True,
        timeout=900,
        env={"PATH": os.environ["PATH"], "EVALFARM_TEST_SLOT": "932"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    assert lines[0]["layers"]["user"].startswith("on (user namespace")
    verdicts = {line["case"]: line["problems"] for line in lines if "case" in line}
    assert set(verdicts) == {case.name for case in CASES}
    assert {name: problems for name, problems in verdicts.items() if problems} == {}
