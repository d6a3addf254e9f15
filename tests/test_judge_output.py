"""What a judge writes: points read only as testlib writes them (never a number inside a
diagnostic), and an interactor's log, which is the judge's own and never the program's output. In
the real sandbox, C++ judges under the real g++."""

from __future__ import annotations

import fcntl
import os
import secrets
import struct
import termios
from collections.abc import Iterator
from typing import Any

import hack_corpus
import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.codecontests.judging import points_of
from evalfarm.envs.scoring import score_job
from evalfarm.sandbox import Sandbox
from evalfarm.sandbox._server_supervise import Capture
from evalfarm.status import Status

# -- points as testlib writes them ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stderr", "stdout", "score"),
    [
        (b"points 0.3333333333 first mismatch at token 1\n", b"", 1 / 3),  # quitp's own line
        (b"first mismatch at token 1\npoints 0.5\n", b"", 0.5),  # its own words first, quitp's last
        (b"points 1\n", b"", 1.0),
        (b"first mismatch at token 1\n", b"0.25\n", 0.25),  # a stream that is one number
        (b"", b".5", 0.5),
        (b"points 1 of 3 tokens\n", b"", 1.0),  # `points X` then a message: X is the score
    ],
)
def test_points_are_read_as_testlib_writes_them(stderr: bytes, stdout: bytes, score: float) -> None:
    verdict = points_of(stderr, stdout)
    assert verdict.score == pytest.approx(score)
    assert verdict.status is (Status.OK if score == 1.0 else Status.WRONG_ANSWER)


@pytest.mark.parametrize(
    ("stderr", "stdout"),
    [
        (b"first mismatch at token 1\n", b""),  # a number inside a diagnostic is no score
        (b"token 1 of 3 is right\n", b"score: 0.3\n"),
        (b"points 1\nfirst mismatch at token 2\n", b""),  # testlib's line is its last
        (b"0.5 of the tokens\n", b""),
        (b"points 0.5abc\n", b""),
        ("points \uff10.\uff15\n".encode(), b""),  # fullwidth digits: testlib reads ASCII
        (b"points 1.5\n", b""),  # not a fraction
        (b"", b""),
    ],
)
def test_no_score_is_found_in_what_testlib_would_not_write(stderr: bytes, stdout: bytes) -> None:
    verdict = points_of(stderr, stdout)
    assert (verdict.status, verdict.score) == (Status.JUDGE_ERROR, 0.0)


# -- the judge's log rolls, it never ends the run -------------------------------------------------


def test_a_rolling_capture_keeps_the_newest_bytes_and_never_stops_the_run() -> None:
    read_end, write_end = os.pipe()
    memfd = os.memfd_create("log")
    sink = os.open(os.devnull, os.O_WRONLY)
    capture = Capture("log", read_end, memfd, 64 << 10, roll=True)
    lines = b"".join(b"query %06d\n" % number for number in range(30_000))  # 360 KB
    try:
        for start in range(0, len(lines), 50_000):
            os.write(write_end, lines[start : start + 50_000])  # within a pipe's 64 KiB
            while _pending(read_end):
                assert capture.drain(sink) is None
        os.close(write_end)
        while not capture.closed:
            assert capture.drain(sink) is None
        kept = os.pread(memfd, 1 << 20, 0)
    finally:
        for fd in (read_end, memfd, sink):
            os.close(fd)
    assert capture.truncated and (32 << 10) <= len(kept) <= (64 << 10)
    assert lines.endswith(kept)  # the newest bytes, in order, nothing lost among them


def _pending(fd: int) -> bool:
    """Bytes wait in the pipe."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0] > 0


# -- in the sandbox ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ctx() -> Iterator[Context]:
    with Sandbox(slot=943) as sandbox:
        yield Context(sandbox=sandbox)


def _score(ctx: Context, code: str, problem: dict[str, Any], **job: Any) -> dict[str, Any]:
    return score_job({"id": "j", "env": "codecontests", "code": code, "problem": problem, **job}, ctx)


def _corpus_problem(name: str) -> dict[str, Any]:
    problem = hack_corpus.problem_file(name, "unused")
    assert problem is not None
    return problem


@pytest.mark.sandbox
def test_a_cpp_checkers_quitp_after_its_own_diagnostic_scores_its_points(ctx: Context) -> None:
    problem = _corpus_problem("points_parsing_quitp")
    result = _score(ctx, "input()\nprint(1, 5, 6)\n", problem, reward_shape="fraction_passed")
    assert result["reward"] == pytest.approx(1 / 3), result
    assert result["tests"][0]["score"] == pytest.approx(1 / 3)


SEARCH = (hack_corpus.PROBLEM_FILES / "interactor_crash_search.py").read_text()
GUESS = (hack_corpus.PROBLEM_FILES / "interactor_crash_guess.py").read_text()
# Logs every query with 8 KB of detail: 10 queries are past the 64 KiB a judge's log keeps.
CHATTY = GUESS.replace(
    "    guess = int(number)\n",
    "    guess = int(number)\n    print(f'query {asked}: {kind} {guess}', '.' * 8000, file=sys.stderr)\n",
)


def _guess(interactor: str) -> dict[str, Any]:
    problem = _corpus_problem("interactor_crash_guess")
    problem["interactor"] = {"language": "python", "code": interactor + f"# {secrets.token_hex(8)}\n"}
    return problem


@pytest.mark.sandbox
def test_an_interactor_that_logs_every_query_does_not_cost_an_honest_program(ctx: Context) -> None:
    result = _score(ctx, SEARCH, _guess(CHATTY))
    assert (result["status"], result["reward"]) == ("ok", 1.0), result


@pytest.mark.sandbox
def test_an_interactors_points_are_read_after_a_log_longer_than_it_keeps(ctx: Context) -> None:
    # Half the points for any program that finds the number, after a megabyte of log.
    points = CHATTY.replace(
        "        sys.exit(0 if guess == secret else 1)\n",
        "        for _ in range(10_000):\n            print('x' * 100, file=sys.stderr)\n"
        "        print('points 0.5 found it', file=sys.stderr)\n        sys.exit(7)\n",
    )
    result = _score(ctx, SEARCH, _guess(points), reward_shape="fraction_passed")
    assert (result["status"], result["reward"]) == ("wrong_answer", 0.5), result
