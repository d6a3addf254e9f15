"""Faults injected into a real farm mid-batch: what each costs, and that no result changes.

Starts its own private Redis and `evalfarm worker` nodes (default settings) for each scenario of
`tests/chaos_support.py`, scores a batch of sandboxed programs with known output, injects the fault
once a third of the results are in, and prints one row per fault: jobs lost, duplicated, wrong
(status or output other than the fault-free one), infra_error, the batch's seconds (the `none` row
is the fault-free time), answers the producer received twice and dropped, and a note (for node
deaths: when the dead node's messages were back on their queues).

    .venv/bin/python bench/chaos.py [--jobs 300] [--only node_main,whole_node]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import chaos_support  # noqa: E402
from netns_support import Network  # noqa: E402


def main() -> int:
    """Run the scenarios one after another; print the table; exit 1 if any result changed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--only", help="comma-separated scenario names (default: all)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(chaos_support.SCENARIOS)
    if why := Network.available():
        print(f"partition rows left out: {why}")
        names = [n for n in names if not n.startswith("partition")]
    print(f"machine: {os.cpu_count()} CPUs; {args.jobs} jobs a scenario (half name numpy), default settings")
    rows = []
    for name in names:
        row = chaos_support.run_scenario(name, args.jobs)
        rows.append(row)
        print(f"  {name}: {row.seconds:.1f} s", file=sys.stderr, flush=True)
    print(chaos_support.table(rows))
    expected_infra = {"same_job_every_try": ["slow"]}
    bad = [
        r
        for r, n in zip(rows, names, strict=True)
        if r.lost or r.dup or r.wrong or r.infra_ids != expected_infra.get(n, [])
    ]
    print(
        "every result equal to its fault-free one"
        if not bad
        else f"CHANGED RESULTS in {[r.fault for r in bad]}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
