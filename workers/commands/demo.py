"""`evalfarm demo`: the main job end to end on an embedded farm, with a summary table.

Scores HumanEval canonical and corrupted completions, a few CodeContests problems, ELM calls,
weight-edit answers and a handful of hostile programs (whichever of those envs are registered), then
prints jobs by env and status, throughput and latency percentiles.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the `demo` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="score a demo batch of every env on an embedded farm and print a summary",
        description="Start an embedded farm (Redis and workers on this machine), score a demo batch "
        "of every registered env, print a summary table and stop the farm.",
    )
    parser.add_argument("--workers", type=int, metavar="N", help="pool processes (default: one per CPU)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the batch, score it on an embedded farm, print the summary; 1 if the farm failed a job."""
    from evalfarm.broker.farm import Farm
    from evalfarm.envs import env_ids
    from evalfarm.workers.demo_jobs import demo_batch
    from evalfarm.workers.embedded import EmbeddedError, EmbeddedFarm

    jobs = demo_batch(env_ids())
    print(f"evalfarm demo: {len(jobs)} jobs over envs {', '.join(sorted({j['env'] for j in jobs}))}")
    compiling = _compile_weight_edit_kernels() if any(j["env"] == "weight_edits" for j in jobs) else None
    print("starting an embedded farm (Redis and a worker node on this machine)...", flush=True)
    # The node's own log (its slots' layers, its shutdown) is the operator's, not the demo's: it goes
    # to a file, shown only when the farm failed.
    with tempfile.TemporaryDirectory(prefix="evalfarm-demo-") as directory:
        node_log = Path(directory) / "node.log"
        try:
            with EmbeddedFarm(workers=args.workers, node_log=node_log) as embedded:
                processes = embedded.wait_ready(60)
                if compiling is not None and compiling.poll() is None:
                    print("compiling the weight-edit grader's kernels (the first run only: they are cached "
                          "on disk, ~40 s)...", flush=True)  # fmt: skip
                    compiling.wait()
                with Farm(embedded.broker_url, progress=not args.no_progress) as farm:
                    started = time.perf_counter()
                    results = farm.score(jobs)
                    elapsed = time.perf_counter() - started
                    stats = farm.last_stats
        except EmbeddedError:
            _show_tail(node_log)
            raise
        if any(result.is_infra for result in results):
            _show_tail(node_log)
    print(highlights(results))
    print(summary(results, elapsed, processes, stats.messages))
    return 1 if any(result.is_infra for result in results) else 0


def _show_tail(log: Path, lines: int = 40) -> None:
    """The end of the node's log, on stderr: why the farm failed."""
    if log.exists():
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        print("the worker node's log ends:", *tail, sep="\n  ", file=sys.stderr)


def _compile_weight_edit_kernels() -> subprocess.Popen[bytes]:
    """Compile (or load from numba's disk cache) the weight-edit grader's loop in a process of its
    own while the farm starts: the workers then load it from the cache instead of each compiling it
    while the batch waits (if this fails, they compile it themselves: slower, not wrong)."""
    code = "from evalfarm.envs.weight_edits.runner import compile_loop; compile_loop()"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def highlights(results: Sequence[dict[str, Any]]) -> str:
    """What became of the hostile programs and the weight-edit answers, one line each."""
    lines = ["", "hostile programs (each must be contained: a status, never a farm failure):"]
    lines += [f"  {r['id']:<32} {r['status']}" for r in results if str(r.get("id")).startswith("hostile-")]
    edits = [r for r in results if r.get("env") == "weight_edits"]
    if edits:
        lines.append("weight-edit answers:")
        lines += [f"  {r['id']:<32} {r['status']:<13} reward {r.get('reward')}" for r in edits]
    return "\n".join(lines)


def summary(results: Sequence[dict[str, Any]], elapsed_s: float, processes: int, messages: int) -> str:
    """The table of jobs by env and status, then throughput, latency and infra errors."""
    counts = Counter((r.get("env"), r.get("status")) for r in results)
    width = max([len(str(env)) for env, _ in counts] + [3])
    lines = ["", f"{'env':<{width}}  {'status':<13} {'jobs':>5}", f"{'-' * width}  {'-' * 13} {'-' * 5}"]
    for (env, status), count in sorted(counts.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))):
        lines.append(f"{env!s:<{width}}  {status!s:<13} {count:>5}")
    latencies = sorted(float(r["latency_s"]) for r in results if r.get("latency_s") is not None)
    run_times = sorted(float(r["run_s"]) for r in results if isinstance(r.get("run_s"), int | float))
    infra = sum(1 for r in results if r.get("status") == "infra_error")
    lines += [
        "",
        f"{len(results)} jobs in {elapsed_s:.2f} s on {processes} worker processes: "
        f"{len(results) / max(elapsed_s, 1e-9):.1f} jobs/s, {messages} messages",
        f"latency (batch start to result): p50 {percentile(latencies, 50):.3f} s, "
        f"p99 {percentile(latencies, 99):.3f} s",
        f"run time per job: p50 {percentile(run_times, 50):.3f} s, p99 {percentile(run_times, 99):.3f} s",
        f"infra errors: {infra}",
    ]
    return "\n".join(lines)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (nearest rank) of already sorted values; nan when there are none."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


if __name__ == "__main__":  # pragma: no cover - run through `evalfarm demo`
    sys.exit(run(argparse.Namespace(workers=None, no_progress=False)))
