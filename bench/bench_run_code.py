"""verl's own SandboxFusion client against the farm's `/run_code` and against SandboxFusion itself, side
by side in one run.

verl's `check_correctness` (`verl/utils/reward_score/sandbox_fusion/utils.py`, unchanged) posts one
`/run_code` per test; K problems are scored at once by a thread pool, as a reward loop scores a batch,
and verl's own semaphore, at K, holds at most K requests in flight. The workload is PROBLEMS small
stdin/stdout problems (sum of numbers, reverse a string, ...) of 3 tests each, made here
deterministically, with correct, wrong and crashing Python answers. The two servers:

- the farm: `evalfarm up --workers 2 --http PORT`;
- SandboxFusion, from a snapshot of its repository: its own FastAPI server
  (`uvicorn sandbox.server.server:app` on 127.0.0.1) in its local mode (`SANDBOX_CONFIG=local`:
  isolation `none`, a program run as a plain subprocess, nothing isolated).

For K=8 and K=32, ROUNDS rounds, the sides alternating which goes first; prints each round's tests/s,
the medians and farm / SandboxFusion with the goals beside them (K=8 >= 4x, K=32 >= 6x), and whether
the two sides gave every test the same verdict.

It needs the snapshot (so in `make bench` it prints a skip line):

    git clone https://github.com/bytedance/SandboxFusion /tmp/SandboxFusion
    .venv/bin/python bench/bench_run_code.py --sandbox-fusion /tmp/SandboxFusion [--rounds 3] [--problems 300]

The snapshot's virtualenv is `bench/sandbox_fusion_runners.py`'s, with what SandboxFusion's server
imports added (uvicorn, databases, aiohttp, tenacity, transformers) the first time. Its Python runner
finds a conda environment by walking up from its interpreter to a `condabin` folder; that virtualenv
is marked as one, so the programs run on its Python. The server mounts the documentation site its
image builds (`docs/build`): an empty folder stands in for it.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from _up import RunningUp  # noqa: E402
from foreign_clients import verl_sandbox_fusion  # noqa: E402
from sandbox_fusion_runners import environment, free_port  # noqa: E402

GOALS = {8: 4.0, 32: 6.0}  # farm / SandboxFusion tests/s, by K
TESTS = 3  # per problem
TIMEOUT_S = 10  # verl's default compile and run timeout
# What SandboxFusion's server imports beyond its request models (its pyproject's versions).
SERVER_DEPENDENCIES = (
    "uvicorn[standard]==0.25.*", "databases[aiosqlite]==0.9.*", "aiohttp", "tenacity>=8.4,<9",
    "transformers>=4.44,<5",
)  # fmt: skip


@dataclass(frozen=True)
class Kind:
    """A small stdin/stdout problem: its input maker, the expected output, a right and a wrong answer."""

    make_input: Callable[[random.Random], str]
    answer: Callable[[str], str]
    correct: str
    wrong: str


def _numbers(rng: random.Random) -> str:
    return " ".join(str(n) for n in rng.sample(range(1, 1000), rng.randint(3, 12)))


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 14)))


def _palindrome_or_not(rng: random.Random) -> str:
    half = _word(rng)
    return half + half[::-1] if rng.random() < 0.5 else half + "x" + half


def _column(rng: random.Random) -> str:
    values = [rng.randint(-50, 50) for _ in range(rng.randint(1, 8))]
    return "\n".join([str(len(values)), *map(str, values)])


def _factorial(text: str) -> str:
    product = 1
    for i in range(1, int(text) + 1):
        product = product * i % 1_000_000_007
    return str(product)


def _fibonacci(text: str) -> str:
    a, b = 0, 1
    for _ in range(int(text)):
        a, b = b, a + b
    return str(a)


KINDS = (
    Kind(_numbers, lambda s: str(sum(map(int, s.split()))),
         "print(sum(map(int, input().split())))", "print(sum(map(int, input().split()[1:])))"),
    Kind(_word, lambda s: s[::-1], "print(input()[::-1])", "print(input()[::-1].upper())"),
    Kind(_numbers, lambda s: str(max(map(int, s.split()))),
         "print(max(map(int, input().split())))", "print(sorted(map(int, input().split()))[-2])"),
    Kind(_word, lambda s: str(sum(c in "aeiou" for c in s)),
         'print(sum(c in "aeiou" for c in input()))', 'print(sum(c in "aeio" for c in input()))'),
    Kind(lambda rng: str(rng.randint(5, 400)), _factorial,
         "n = int(input())\np = 1\nfor i in range(1, n + 1):\n    p = p * i % 1_000_000_007\nprint(p)",
         "n = int(input())\np = 1\nfor i in range(1, n):\n    p = p * i % 1_000_000_007\nprint(p)"),
    Kind(_numbers, lambda s: " ".join(map(str, sorted(map(int, s.split())))),
         "print(*sorted(map(int, input().split())))",
         "print(*sorted(map(int, input().split()), reverse=True))"),
    Kind(lambda rng: str(rng.randint(1, 90)), _fibonacci,
         "a, b = 0, 1\nfor _ in range(int(input())):\n    a, b = b, a + b\nprint(a)",
         "a, b = 1, 1\nfor _ in range(int(input())):\n    a, b = b, a + b\nprint(a)"),
    Kind(_palindrome_or_not, lambda s: "YES" if s == s[::-1] else "NO",
         's = input()\nprint("YES" if s == s[::-1] else "NO")', 'input()\nprint("YES")'),
    Kind(_column, lambda s: str(sum(int(v) ** 2 for v in s.split()[1:])),
         "n = int(input())\nprint(sum(int(input()) ** 2 for _ in range(n)))",
         "n = int(input())\nprint(sum(int(input()) for _ in range(n)))"),
    Kind(lambda rng: f"{rng.randint(1, 10**6)} {rng.randint(1, 10**6)}",
         lambda s: str(math.gcd(*map(int, s.split()))),
         "import math\na, b = map(int, input().split())\nprint(math.gcd(a, b))",
         "a, b = map(int, input().split())\nprint(min(a, b))"),
    Kind(lambda rng: " ".join(_word(rng) for _ in range(rng.randint(1, 9))), lambda s: str(len(s.split())),
         "print(len(input().split()))", 'print(input().count(" "))'),
)  # fmt: skip
CRASHES = ("print(undefined_name)", "def f(:\n    pass", "import sys\nsys.exit(3)", "{correct}\n1 / 0")


def problems(count: int) -> list[tuple[dict[str, list[str]], str]]:
    """`count` problems as verl scores them: (in_outs, generation); ~60% right, 25% wrong, 15% crash."""
    made = []
    for i in range(count):
        rng = random.Random(i)
        kind = KINDS[i % len(KINDS)]
        inputs = [kind.make_input(rng) for _ in range(TESTS)]
        draw = rng.random()
        if draw < 0.60:
            code = kind.correct
        elif draw < 0.85:
            code = kind.wrong
        else:
            code = rng.choice(CRASHES).format(correct=kind.correct)
        made.append(({"inputs": inputs, "outputs": [kind.answer(s) for s in inputs]}, code))
    return made


def score(url: str, work: list[tuple[dict[str, list[str]], str]], k: int) -> tuple[float, list[Any]]:
    """Every problem through verl's `check_correctness`, K at once under verl's semaphore at K:
    (seconds, the per-test verdicts in order)."""
    check = verl_sandbox_fusion().utils.check_correctness
    semaphore = threading.Semaphore(k)

    def one(problem: tuple[dict[str, list[str]], str]) -> list[Any]:
        in_outs, code = problem
        return check(f"{url}/run_code", in_outs, code, timeout=TIMEOUT_S, concurrent_semaphore=semaphore)[0]

    with ThreadPoolExecutor(k) as pool:
        started = time.perf_counter()
        verdicts = [v for results in pool.map(one, work) for v in results]
        return time.perf_counter() - started, verdicts


class SandboxFusion:
    """SandboxFusion's own server from a snapshot, in its local mode, on 127.0.0.1; stopped by PID."""

    def __init__(self, snapshot: Path) -> None:
        python = server_environment(snapshot)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = (snapshot / ".evalfarm-server.log").open("w")
        command = [str(python), "-m", "uvicorn", "sandbox.server.server:app", "--host", "127.0.0.1"]
        self.proc = subprocess.Popen(
            [*command, "--port", str(port)],
            cwd=snapshot, env={**os.environ, "SANDBOX_CONFIG": "local"},
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if requests.get(f"{self.url}/v1/ping", timeout=2).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.5)
        self.stop()
        raise SystemExit(f"SandboxFusion's server did not start: see {self.log.name}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def server_environment(snapshot: Path) -> Path:
    """sandbox_fusion_runners.py's virtualenv with the server's own imports; the snapshot made to serve."""
    python = environment(snapshot)
    probe = "import uvicorn, databases, aiosqlite, aiohttp, tenacity, transformers"
    if subprocess.run([str(python), "-c", probe], capture_output=True).returncode:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *SERVER_DEPENDENCIES], check=True)
    (python.parent.parent / "condabin").mkdir(exist_ok=True)  # the runner's conda root: this venv
    (snapshot / "docs" / "build").mkdir(parents=True, exist_ok=True)
    return python


def describe(snapshot: Path) -> str:
    commit = subprocess.run(
        ["git", "-C", str(snapshot), "log", "-1", "--format=%h %cs"], capture_output=True, text=True
    ).stdout.strip()
    return f"SandboxFusion {commit or '(not a git checkout)'}"


def tally(verdicts: list[Any]) -> str:
    counts = Counter(str(v) for v in verdicts)
    return ", ".join(f"{name} {counts[name]}" for name in sorted(counts))


def compare(k: int, rounds: int, sides: dict[str, str], work: list[Any]) -> dict[str, list[list[Any]]]:
    """ROUNDS alternating rounds at K: each round's tests/s, then the medians and the ratio."""
    rates: dict[str, list[float]] = {name: [] for name in sides}
    verdicts: dict[str, list[list[Any]]] = {name: [] for name in sides}
    tests = len(work) * TESTS
    print(f"K={k} ({tests} /run_code requests a pass):", flush=True)
    for round_ in range(rounds):
        order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
        for name in order:
            seconds, got = score(sides[name], work, k)
            rates[name].append(tests / seconds)
            verdicts[name].append(got)
        line = ", ".join(f"{name} {rates[name][-1]:6.1f} tests/s" for name in sides)
        print(f"  round {round_ + 1}: {line}", flush=True)
    farm, fusion = (statistics.median(rates[name]) for name in sides)
    ratio = farm / fusion
    verdict = "meets" if ratio >= GOALS[k] else "MISSES"
    print(f"  median: farm {farm:.0f} tests/s, SandboxFusion {fusion:.0f} tests/s")
    print(f"  farm / SandboxFusion at K={k}: {ratio:.2f}x ({verdict} the goal >= {GOALS[k]:.0f}x)")
    return verdicts


def agreement(verdicts: dict[str, list[list[Any]]], work: list[Any]) -> None:
    """Whether every pass of each side gave each test the same verdict; the first differences."""
    farm, fusion = verdicts.values()
    reference = fusion[0]
    passes = farm + fusion
    differing = sorted({i for run in passes for i, v in enumerate(run) if v != reference[i]})
    print("verdicts (verl's codes: True passed, False wrong, -2 run failed, ...):")
    print(f"  farm          {tally(farm[0])}")
    print(f"  SandboxFusion {tally(reference)}")
    counted = f"{len(passes)} passes of {len(reference)} tests"
    print(f"same per-test verdicts on both sides, every pass: {not differing} ({counted})")
    for i in differing[:5]:
        code = work[i // TESTS][1]
        print(f"  test {i}: SandboxFusion {reference[i]!r}, farm {[run[i] for run in farm]!r}; {code!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandbox-fusion", type=Path, help="a checkout of bytedance/SandboxFusion")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--problems", type=int, default=300)
    args = parser.parse_args()
    if args.sandbox_fusion is None:
        print("bench_run_code skipped: it needs a snapshot of SandboxFusion (--sandbox-fusion PATH)")
        return 0
    work = problems(args.problems)
    load = os.getloadavg()[0]  # other work on the machine moves both sides' figures
    python = sys.version.split()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f} at the start; python {python}")
    print(f"{len(work)} problems x {TESTS} tests through verl's check_correctness, unchanged")
    fusion = SandboxFusion(args.sandbox_fusion.resolve())
    try:
        with RunningUp("--http", str(free_port()), workers=2) as farm:
            sides = {"farm": farm.http, "SandboxFusion": fusion.url}
            print(f"farm: evalfarm up --workers 2 at {farm.http}")
            print(f"{describe(args.sandbox_fusion)}: its server, local mode (no isolation), at {fusion.url}")
            for url in sides.values():
                score(url, work[:64], 8)  # warm: workers, forks, the runner's interpreter lookup
            verdicts: dict[str, list[list[Any]]] = {name: [] for name in sides}
            for k in GOALS:
                for name, runs in compare(k, args.rounds, sides, work).items():
                    verdicts[name] += runs
            agreement(verdicts, work)
    finally:
        fusion.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
