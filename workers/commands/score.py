"""`evalfarm score JOBS.jsonl`: score a file of jobs and write the results in the same order."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `score` subcommand."""
    parser = subparsers.add_parser("score", help="score a JSONL file of jobs; results in the same order")
    parser.add_argument("jobs", help="JSONL file of jobs ('-' for standard input)")
    parser.add_argument("-o", "--output", help="where to write the results (default: standard output)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--inline", action="store_true", help="no queue: a local pool of sandboxes")
    from evalfarm.workers.farm_score import add_arguments

    add_arguments(where)
    parser.add_argument("--workers", type=int, default=2, help="processes for --inline and --local")
    parser.add_argument(
        "--cpus", help="comma-separated cores to pin --inline workers and their sandboxes to (default: all)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(func=score)


def write_results(
    results: Iterator[dict[str, Any]], total: int, output: IO[str], progress: bool
) -> dict[str, int]:
    """Write results as JSONL while advancing a progress bar; return the count by status."""
    counts: dict[str, int] = {}
    with _progress_bar(total, progress) as advance:
        for result in results:
            output.write(json.dumps(result) + "\n")
            counts[result["status"]] = counts.get(result["status"], 0) + 1
            advance()
    return counts


@contextlib.contextmanager
def _progress_bar(total: int, shown: bool) -> Iterator[Callable[[], object]]:
    """A function advancing a bar on stderr by one job; tqdm is not even imported when not shown."""
    if not shown:
        yield lambda: None
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="job", file=sys.stderr) as bar:
        yield bar.update


def score(args: argparse.Namespace) -> int:
    """Score the file where the flags say; exit 0 when every line produced a result, 2 when the
    file cannot be read."""
    from evalfarm.workers.jobs_file import InputError, read_jobs_file

    try:
        lines = read_jobs_file(args.jobs)
    except InputError as error:
        print(f"evalfarm score: {error}", file=sys.stderr)
        return 2
    if not lines:
        print(f"evalfarm score: {args.jobs} holds no jobs (no non-blank line)", file=sys.stderr)
        return 0
    with contextlib.ExitStack() as stack:
        output = stack.enter_context(open(args.output, "w")) if args.output else sys.stdout
        results = stack.enter_context(results_of(args, lines))
        counts = write_results(results, len(lines), output, progress=not args.no_progress)
    summary = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
    print(f"scored {sum(counts.values())} jobs: {summary}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def results_of(args: argparse.Namespace, lines: list[Any]) -> Iterator[Iterator[dict[str, Any]]]:
    """The results of `lines` in order, from where the flags say: inline, a local farm or a broker
    (also `evalfarm datasets lint`'s)."""
    if args.inline:
        from evalfarm.workers.inline import InlinePool, chunksize_for, env_ids_of
        from evalfarm.workers.jobs_file import in_place

        cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else None
        texts = [line for line in lines if isinstance(line, str)]
        with InlinePool(args.workers, cpus, env_ids_of(texts)) as pool:
            yield in_place(lines, lambda good: pool.score_lines(good, chunksize_for(len(good), args.workers)))
        return
    from evalfarm.workers.farm_score import farm_results

    with farm_results(args, lines) as results:
        yield results
