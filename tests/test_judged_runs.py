"""Judged runs: a candidate serving calls in one sandboxed process, a judge calling it from another
(sandbox.bridge); the judge sees plain values, the candidate never sees the judge."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator

import pytest

from evalfarm.sandbox import JudgeSpec, Limits, Sandbox, Status, bridge, values, verdict

pytestmark = pytest.mark.sandbox

# A judge that reports what its call gave: the value's type and repr, or the exception raised here.
PROBE = """
import json
f = candidate.function("f")
try:
    value = f(*json.loads(JUDGE_DATA))
    report({"status": "ok", "type": type(value).__name__, "repr": repr(value)})
except Exception as error:
    report({"status": "runtime_error", "error": f"{type(error).__name__}: {error}"})
"""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(slot=920) as box:
        yield box


def probe(sandbox: Sandbox, code: str, *args: object, limits: Limits | None = None) -> tuple[Status, dict]:
    run = sandbox.run_judged(code, JudgeSpec(PROBE, json.dumps(args).encode()), limits=limits)
    return run.status, run.judge or {"error": run.error}


def test_a_value_arrives_as_the_plain_value_it_is(sandbox: Sandbox) -> None:
    assert probe(sandbox, "def f(x):\n    return (x, {x}, b'x', 1.5)\n", 2) == (
        Status.OK, {"status": "ok", "type": "tuple", "repr": "(2, {2}, b'x', 1.5)"},
    )  # fmt: skip
    status, report = probe(sandbox, "class E:\n    def __eq__(s, o): return True\ndef f():\n    return E()\n")
    assert status is Status.RUNTIME_ERROR and "type E is not a plain value" in report["error"]


# A judge that reports what the test sees of the exception its call raised.
CATCH = """
from evalfarm.sandbox.bridge import describe
try:
    candidate.function("f")()
    report({"status": "ok", "raised": None})
except BaseException as error:
    report({"status": "ok", "type": type(error).__name__, "str": str(error), "args": list(error.args),
            "described": describe(error),
            "caught_as": [kind.__name__ for kind in KINDS if isinstance(error, kind)],
            "builtin": type(error) is getattr(__builtins__, type(error).__name__, None)})
"""
KINDS = "(Exception, ValueError, KeyError, LookupError, OSError, UnicodeError, StopIteration, SystemExit)"


def caught(sandbox: Sandbox, code: str) -> dict:
    run = sandbox.run_judged(code, JudgeSpec(f"KINDS = {KINDS}\n" + CATCH))
    assert run.status is Status.OK, run.error
    return run.judge or {}


def test_the_candidates_exception_is_raised_in_the_judge_as_a_type_of_the_judges_own(
    sandbox: Sandbox,
) -> None:
    seen = caught(sandbox, "def f():\n    raise KeyError('k')\n")
    assert (seen["type"], seen["str"], seen["args"], seen["described"]) == (
        "KeyError",
        "'k'",
        ["'k'"],
        "KeyError: 'k'",
    )
    assert seen["caught_as"] == ["Exception", "KeyError", "LookupError"] and not seen["builtin"]
    seen = caught(sandbox, "class Mine(ValueError): pass\ndef f():\n    raise Mine('x')\n")
    assert (seen["caught_as"], seen["str"], seen["described"]) == (
        ["Exception", "ValueError"],
        "x",
        "Mine: x",
    )
    seen = caught(sandbox, "class Mine(Exception): pass\ndef f():\n    raise Mine('x')\n")
    assert (seen["type"], seen["caught_as"], seen["described"]) == (
        "CandidateRaised",
        ["Exception"],
        "Mine: x",
    )
    seen = caught(sandbox, "def f():\n    raise OSError(2, 'gone', 'file')\n")
    assert (seen["caught_as"], seen["str"]) == (["Exception", "OSError"], "[Errno 2] gone: 'file'")


@pytest.mark.parametrize(
    "code",
    [
        # Its own class named as the builtin: before, the judge built the builtin from these arguments,
        # and CPython 3.11's str() of it read far outside the object (SIGSEGV: judge_error).
        "class UnicodeDecodeError(Exception):\n    pass\n"
        "def f():\n    raise UnicodeDecodeError('utf-8', b'x', -10**9, -10**9 + 1, 'bad')\n",
        "def f():\n    raise UnicodeEncodeError('utf-8', 'x', -10**9, -10**9 + 1, 'bad')\n",
        "class OSError(Exception):\n    pass\ndef f():\n    raise OSError(-1, 'x' * 10**6, 10**5000)\n",
        "class E(Exception):\n    def __str__(self):\n        return str(self)\ndef f():\n    raise E()\n",
        "class E(Exception):\n    def __str__(self):\n        return 'x' * 10**5\n"
        "def f():\n    raise E([[[]]] * 10**6)\n",
    ],
    ids=["fake-unicode-decode", "unicode-encode-out-of-range", "fake-oserror", "recursive-str", "huge-str"],
)
def test_an_exception_with_hostile_arguments_crosses_as_its_name_and_message(
    sandbox: Sandbox, code: str
) -> None:
    seen = caught(sandbox, code)
    assert "Exception" in seen["caught_as"] and len(seen["str"]) <= bridge.MAX_MESSAGE_CHARS
    assert not seen["builtin"] and len(seen["args"]) == 1


@pytest.mark.parametrize(
    ("raised", "kind", "exception"),
    [
        ("StopIteration", "CandidateRaised", True),
        ("StopAsyncIteration", "CandidateRaised", True),
        ("GeneratorExit", "CandidateExit", False),
        ("SystemExit(0)", "CandidateExit", False),
        ("KeyboardInterrupt", "CandidateExit", False),
        ("BaseException", "CandidateExit", False),
    ],
)
def test_what_ends_an_iteration_or_a_program_never_arrives_as_itself(
    sandbox: Sandbox, raised: str, kind: str, exception: bool
) -> None:
    seen = caught(sandbox, f"def f():\n    raise {raised}\n")
    assert (seen["type"], "Exception" in seen["caught_as"]) == (kind, exception)
    assert seen["described"].startswith(raised.partition("(")[0])
    assert "StopIteration" not in seen["caught_as"] and "SystemExit" not in seen["caught_as"]


def test_a_candidate_that_ends_during_the_test_fails_whatever_the_judge_says(sandbox: Sandbox) -> None:
    swallowing = JudgeSpec(
        "try:\n    candidate.function('f')()\nexcept BaseException:\n    pass\nreport({'status': 'ok'})\n"
    )
    run = sandbox.run_judged("import os\ndef f():\n    os._exit(0)\n", swallowing)
    assert (run.status, run.error) == (Status.RUNTIME_ERROR, "the program exited before the test finished")
    run = sandbox.run_judged("def f():\n    pass\nraise SystemExit(0)\n", swallowing)
    assert run.status is Status.RUNTIME_ERROR


def test_the_judges_own_failures_are_judge_errors(sandbox: Sandbox) -> None:
    assert (
        sandbox.run_judged("def f(): pass\n", JudgeSpec("raise NameError('x')\n")).status
        is Status.JUDGE_ERROR
    )
    assert sandbox.run_judged("def f(): pass\n", JudgeSpec("pass\n")).status is Status.JUDGE_ERROR
    unsendable = JudgeSpec("candidate.function('f')(lambda: 1)\n")
    run = sandbox.run_judged("def f(x): pass\n", unsendable)
    assert run.status is Status.JUDGE_ERROR and "cannot cross as data" in (run.error or "")


@pytest.mark.parametrize(
    "failure",
    ["import ctypes\nctypes.string_at(0)\n", "raise NameError('x')\n", "pass\n", "import os\nos._exit(3)\n"],
    ids=["sigsegv", "raises", "no-verdict", "exits"],
)
def test_a_judge_that_fails_once_it_called_the_candidate_is_not_shown_faulty(
    sandbox: Sandbox, failure: str
) -> None:
    before = sandbox.run_judged("def f(): pass\n", JudgeSpec(failure))
    assert before.status is Status.JUDGE_ERROR, before.error
    after = sandbox.run_judged("def f(): pass\n", JudgeSpec("candidate.function('f')()\n" + failure))
    assert after.status is Status.RUNTIME_ERROR and verdict.judge_failed_after_calls(after.error), after.error
    assert not verdict.judge_failed_after_calls(before.error)


def test_a_candidate_that_loops_is_a_timeout_and_the_judge_is_ended_too(sandbox: Sandbox) -> None:
    run = sandbox.run_judged(
        "def f():\n    while True: pass\n", JudgeSpec(PROBE, b"[]"), Limits(wall_s=1, cpu_s=5)
    )
    assert run.status is Status.TIMEOUT and run.wall_s < 3


def test_a_reply_over_the_cap_fails_the_call(sandbox: Sandbox) -> None:
    judge = JudgeSpec(PROBE, b"[]", max_reply_bytes=1000)
    run = sandbox.run_judged("def f():\n    return 'x' * 5000\n", judge)
    assert run.status is Status.RUNTIME_ERROR and "over the cap" in (run.judge or {}).get("error", "")


def test_what_the_candidate_prints_is_its_output(sandbox: Sandbox) -> None:
    run = sandbox.run_judged(
        "print('top')\ndef f():\n    print('called')\n    return 1\n", JudgeSpec(PROBE, b"[]")
    )
    assert run.status is Status.OK and run.stdout == b"top\ncalled\n"
    assert (run.exit_code, run.signal) == (None, None)  # the farm ended it, once the judge was done


def test_the_judges_data_never_reaches_the_candidates_process(sandbox: Sandbox) -> None:
    marker = "-".join(["JUDGE", "ONLY", os.urandom(8).hex()])
    candidate = (
        "import gc, os\n"
        "def f():\n"
        "    seen = [str(o) for o in gc.get_objects() if isinstance(o, (str, bytes))]\n"
        "    for fd in range(3, 32):\n"
        "        try:\n"
        "            os.set_blocking(fd, False)\n"
        "            seen.append(str(os.read(fd, 1 << 16)))\n"
        "        except OSError:\n"
        "            pass\n"
        "    return any('JUDGE' + '-ONLY-' in s for s in seen)\n"
    )
    judge = JudgeSpec(
        f"# {marker}\nreport({{'status': 'ok', 'found': candidate.function('f')()}})\n", marker.encode()
    )
    run = sandbox.run_judged(candidate, judge)
    assert (run.status, run.judge) == (Status.OK, {"status": "ok", "found": False})


def test_the_bridge_over_plain_pipes() -> None:
    # The two ends, in one process: a thread serves calls into a namespace over two pipes.
    requests, replies = os.pipe(), os.pipe()
    namespace = {"double": lambda x: 2 * x, "fail": lambda: 1 / 0, "opaque": lambda: object()}
    server = threading.Thread(
        target=bridge.serve, args=(namespace, requests[0], replies[1], 1 << 20), daemon=True
    )
    server.start()
    candidate = bridge.Candidate(requests[1], replies[0])
    assert candidate.function("double")((1, 2)) == (1, 2, 1, 2)
    with pytest.raises(ZeroDivisionError) as error:
        candidate.function("fail")()
    assert type(error.value) is not ZeroDivisionError and str(error.value) == "division by zero"
    with pytest.raises(bridge.CandidateError, match="is not a plain value"):
        candidate.function("opaque")()
    with pytest.raises(NameError):
        candidate.function("missing")()
    os.close(requests[1])
    server.join()
    with pytest.raises(bridge.CandidateGone):
        candidate.function("double")(1)
    for fd in (requests[0], replies[0], replies[1]):
        os.close(fd)


@pytest.mark.parametrize(
    ("data", "returned", "error"),
    [
        (None, False, "ended before its function returned"),
        (b"\x00\x00\x00\x02[]", False, "cannot cross as data"),
        (b'\x00\x00\x00\x0b["what", 1]', False, "a malformed reply"),
        (b"\x00\x00\x00\x09", False, "did not come back whole"),
        (b"\x00\x00\x00\x10" + b"[" * 16, False, "cannot cross as data"),
    ],
)
def test_a_reply_read_outside_never_raises(data: bytes | None, returned: bool, error: str) -> None:
    reply = bridge.parse_reply(data)
    assert reply.returned is returned and error in (reply.error or "")


def test_a_good_reply_read_outside() -> None:
    body = values.encode(["return", {"a": (1, 2)}])
    frame = len(body).to_bytes(4, "big") + body
    assert bridge.parse_reply(frame).value == {"a": (1, 2)}
    assert bridge.parse_reply(frame, json_compatible=True).value == {"a": [1, 2]}


# -- the judge host: one walled-in process per slot, forking each job's judge ------------------------


def test_nothing_a_judge_does_to_its_process_reaches_the_next_jobs_judge(sandbox: Sandbox) -> None:
    # A job's test (which a model may have written) patches what every judge uses, and leaves a thread.
    poison = (
        "import builtins, json, threading, time\n"
        'json.dumps = lambda *a, **k: \'{"status": "ok"}\'\n'
        "builtins.AssertionError = KeyError\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "report({'status': 'ok'})\n"
    )
    assert sandbox.run_judged("def f(): pass\n", JudgeSpec(poison)).status is Status.OK
    honest = "f = candidate.function('f')\nassert f() == 1\nreport({'status': 'ok'})\n"
    run = sandbox.run_judged("def f():\n    return 2\n", JudgeSpec(honest))
    assert run.status is Status.RUNTIME_ERROR and "AssertionError" in (run.error or "")


def test_what_a_judge_changes_of_its_process_is_gone_for_the_next(sandbox: Sandbox) -> None:
    change = (
        "import os, sys\nsys.setrecursionlimit(50)\nos.environ['X'] = '1'\nos.chdir('/')\n"
        "report({'status': 'ok'})\n"
    )
    assert sandbox.run_judged("def f(): pass\n", JudgeSpec(change)).status is Status.OK
    state = "[sys.getrecursionlimit(), 'X' in os.environ, os.getcwd()]"
    check = f"import os, sys\nreport({{'status': 'ok', 'state': {state}}})\n"
    run = sandbox.run_judged("def f(): pass\n", JudgeSpec(check))
    assert (run.judge or {})["state"] == [1000, False, "/tmp"]


def test_a_judge_past_the_wall_clock_is_a_timeout_and_the_next_job_gets_a_fresh_host(
    sandbox: Sandbox,
) -> None:
    run = sandbox.run_judged(
        "def f(): pass\n", JudgeSpec("while True:\n    pass\n"), Limits(wall_s=1, cpu_s=5)
    )
    assert run.status is Status.TIMEOUT and run.wall_s < 3
    again = sandbox.run_judged("def f(): pass\n", JudgeSpec("report({'status': 'ok'})\n"))
    assert again.status is Status.OK


def test_a_judges_cpu_time_counts_against_the_jobs_limit(sandbox: Sandbox) -> None:
    spin = (
        "import time\nend = time.process_time() + 1.5\nwhile time.process_time() < end:\n    pass\n"
        "report({'status': 'ok'})\n"
    )
    run = sandbox.run_judged("def f(): pass\n", JudgeSpec(spin), Limits(wall_s=5, cpu_s=1))
    assert run.status is Status.TIMEOUT and "judging" in (run.error or "")


def test_one_problems_jobs_share_a_judge_and_a_new_problems_judge_was_forked_ahead(
    sandbox: Sandbox,
) -> None:
    # The judge says which process it is and when that process started (clock ticks since boot).
    whoami = (
        "import os\nfields = open('/proc/self/stat').read().rpartition(')')[2].split()\n"
        "report({'status': 'ok', 'pid': os.getpid(), 'start': int(fields[19]) / os.sysconf('SC_CLK_TCK'),"
        " 'problem': JUDGE_DATA.decode()})\n"
    )
    first = [sandbox.run_judged("def f(): pass\n", JudgeSpec(whoami, b"A")).judge or {} for _ in range(2)]
    assert first[0]["pid"] == first[1]["pid"]  # one problem, one judge
    time.sleep(1.0)
    asked = time.clock_gettime(time.CLOCK_BOOTTIME)
    other = sandbox.run_judged("def f(): pass\n", JudgeSpec(whoami, b"B")).judge or {}
    assert other["problem"] == "B" and other["pid"] != first[0]["pid"]
    assert other["start"] < asked - 0.5  # waiting before the job was sent, having run nothing


def test_a_judge_compiles_its_problems_code_once() -> None:
    from evalfarm.sandbox import _judge_host

    code = _judge_host.compile_once("x = 1\n", "test.py")
    assert _judge_host.compile_once("x = 1\n", "test.py") is code
    assert _judge_host.compile_once("x = 1\n", "prompt.py") is not code
    for _ in range(2):  # a failed compile raises for every job that asks, and is not kept
        with pytest.raises(SyntaxError):
            _judge_host.compile_once("def (:\n", "test.py")
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace["x"] == 1
