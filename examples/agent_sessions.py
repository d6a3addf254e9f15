"""Agents that run code mid-rollout: one session per rollout, many rollouts at once, then the reward.

Each rollout is a multi-turn tool loop as ReTool- or SimpleTIR-style training runs it: the policy
writes a cell, the farm runs it in the rollout's own session (its variables and files kept between
turns), the output goes back into the context, and the loop goes on until the policy answers. Here
the "policy" is a script of cells per rollout (a real trainer samples them from the model); some
turns raise, one loops and is interrupted at its timeout, and the session goes on after each. The
final answers are then scored as jobs, never from the sessions' own output: a session's output is
the program's own word (docs/sessions.md).

    .venv/bin/python examples/agent_sessions.py                  # an embedded farm, started here
    .venv/bin/python examples/agent_sessions.py --broker redis://HOST:6379/0 --rollouts 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from evalfarm import AsyncFarm
from evalfarm.workers.embedded import broker_or_embedded

# The turns of one rollout: find the sum of the first n primes, step by step.
TURNS = [
    "import math\nprimes = []",
    "def is_prime(k):\n    return k > 1 and all(k % d for d in range(2, math.isqrt(k) + 1))",
    "candidate = 2\nwhile len(primes) < {n}:\n    if is_prime(candidate):\n        primes.append(candidate)\n"
    "    candidate += 1\nlen(primes)",
    "primes[{n}]",  # an IndexError: the agent reads the traceback and goes on
    "while True: pass",  # a runaway cell: interrupted at its timeout, the state kept
    "answer = sum(primes)\nanswer",
]


async def rollout(farm: AsyncFarm, index: int) -> tuple[int, list[str]]:
    """One agent's episode in a session of its own; its final answer and the statuses of its turns."""
    n = 10 + index
    statuses = []
    async with farm.session(ttl_s=120, limits={"timeout_s": 2}) as session:
        for turn in TURNS:
            result = await session.run(turn.format(n=n), timeout_s=0.5 if "while True" in turn else None)
            statuses.append(result.status)
            if not result.session_alive:  # lost with its node, or killed: a real loop would reopen
                break
        answer = int(result.value or 0)
    return answer, statuses


async def episode(url: str, rollouts: int, as_json: bool = False) -> int:
    async with AsyncFarm(url) as farm:
        started = time.perf_counter()
        outcomes = await asyncio.gather(*(rollout(farm, i) for i in range(rollouts)))
        took = time.perf_counter() - started
        # The reward: each answer checked by a job (the farm's verdict), not by the session's output.
        jobs = [
            {
                "id": f"r{i}",
                "env": "program",
                "code": f"primes, k = [], 2\nwhile len(primes) < {10 + i}:\n"
                f"    primes += [k] if all(k % d for d in range(2, k)) else []\n    k += 1\n"
                f"print(sum(primes) == {answer})",
            }
            for i, (answer, _) in enumerate(outcomes)
        ]
        results = await farm.score(jobs)
    rewards = [1.0 if r.get("stdout", "").strip() == "True" else 0.0 for r in results]
    for index, ((answer, statuses), reward) in enumerate(zip(outcomes, rewards, strict=True)):
        if index < 4:
            print(f"rollout {index}: answer {answer}, turns {' '.join(statuses)}, reward {reward}")
    mean = sum(rewards) / rollouts
    print(f"{rollouts} rollouts of {len(TURNS)} turns in {took:.2f} s; mean reward {mean:.2f}")
    if as_json:
        print(json.dumps({"rollouts": rollouts, "rewards": rewards, "turns": [s for _, s in outcomes]}))
    return 0 if all(rewards) else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--broker", help="a running farm (default: an embedded one, started here)")
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1, help="pool processes of the embedded farm")
    parser.add_argument("--json", action="store_true", help="end with a JSON line of the outcomes")
    args = parser.parse_args()
    with broker_or_embedded(args.broker, args.workers) as url:
        return asyncio.run(episode(url, args.rollouts, args.json))


if __name__ == "__main__":
    raise SystemExit(main())
