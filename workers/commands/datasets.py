"""`evalfarm datasets`: prepare problem sets, and install them where workers look them up by id.

    evalfarm datasets prepare KIND --source FILE_OR_DIR --out FILE.jsonl [--time-scale X]
    evalfarm datasets load FILE.jsonl [--id ID] [--dir DIR] [--replace]
    evalfarm datasets list [--dir DIR]
    evalfarm datasets lint FILE.jsonl [--inline | --broker URL | --local] [--report REPORT.jsonl]

KIND: codecontests (deepmind/code_contests), openr1-codeforces, codecontests-plus, taco, apps,
livecodebench: local copies of each dataset's own files, as downloaded (`envs/codecontests/sources.py`);
each problem keeps its dataset's time and memory limits, every time limit multiplied by --time-scale.
`lint` judges each problem's own correct and incorrect solutions through the farm and lists the
problems that reject a correct one, accept a wrong one, or cannot be judged.

`load` validates FILE.jsonl and writes its valid problems to DIR/<ID>.jsonl (ID defaults to the file's
stem); DIR is --dir, else EVALFARM_DATASETS_DIR, else ~/.local/share/evalfarm/datasets. Workers given
the same directory serve `codecontests` jobs that say `problem_id` (and optionally `dataset`: ID).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from evalfarm.envs.codecontests.prepare import PrepareOptions, prepare_codecontests
from evalfarm.envs.codecontests.sources import READERS, SourceOptions, prepare_source
from evalfarm.envs.datasets import Caps, DatasetError, DatasetStore, install_dataset, resolve_datasets_dir


def register(subparsers: Any) -> None:
    """Add `datasets` and its `prepare`, `load`, `list` and `lint` subcommands."""
    parser = subparsers.add_parser("datasets", help="prepare, install and lint problem datasets")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_prepare(actions)
    _add_load(actions)
    _add_lint(actions)
    listing = actions.add_parser("list", help="the datasets installed for workers")
    listing.add_argument(
        "--dir", help="datasets directory (default: EVALFARM_DATASETS_DIR or ~/.local/share/...)"
    )
    listing.set_defaults(func=list_datasets)


def _add_prepare(actions: Any) -> None:
    """`datasets prepare KIND`: a public dataset's own files -> JSONL."""
    parser = actions.add_parser("prepare", help="convert a public dataset to the problem JSONL format")
    parser.add_argument("kind", choices=["codecontests", *READERS], help="the dataset's format")
    parser.add_argument(
        "--source", required=True,
        help="a parquet, JSONL or Arrow file, or a directory of them (a dataset's folder as downloaded)",
    )  # fmt: skip
    parser.add_argument("--out", required=True, help="the JSONL file to write")
    parser.add_argument(
        "--max-hidden", type=int, default=50, help="hidden tests kept per problem (default 50)"
    )
    parser.add_argument(
        "--solutions", type=int, default=None,
        help="correct and incorrect solutions kept per problem, for `lint` (default 5; codecontests 0)",
    )  # fmt: skip
    parser.add_argument(
        "--checker", default=None,
        help="the checker of problems without one of their own (default auto; codecontests: exact)",
    )  # fmt: skip
    parser.add_argument("--min-public", type=int, default=1, help="codecontests: minimum public tests")
    parser.add_argument("--min-difficulty", type=int, help="codecontests: lower difficulties are dropped")
    parser.add_argument("--max-difficulty", type=int, help="codecontests: higher difficulties are dropped")
    parser.add_argument("--max-samples", type=int, help="stop after writing this many problems")
    parser.add_argument(
        "--time-scale", type=_positive, default=1.0,
        help="multiply every problem's time limit (default 1: the dataset's limits as written)",
    )  # fmt: skip
    parser.add_argument(
        "--special-judge", help="taco: TACO's special-judge list (default: output_spj.jsonl in --source)"
    )
    parser.set_defaults(func=prepare)


def _positive(text: str) -> float:
    """A positive number of the command line."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text}: a factor in (0, 100]")
    return value


def _add_lint(actions: Any) -> None:
    """`datasets lint FILE.jsonl`: judge each problem's own solutions and list the poisoned ones."""
    parser = actions.add_parser(
        "lint", help="judge a dataset's own solutions; list problems that reject correct or accept wrong ones"
    )
    parser.add_argument("file", help="a JSONL file of problems with `solutions` (as `prepare` writes)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--inline", action="store_true", help="no queue: a local pool of sandboxes (default)")
    from evalfarm.workers.farm_score import add_arguments

    add_arguments(where)
    parser.add_argument("--workers", type=int, default=2, help="processes for --inline and --local")
    parser.add_argument("--cpus", help="comma-separated cores for --inline workers (default: all)")
    parser.add_argument("--max-problems", type=int, help="lint at most this many problems")
    parser.add_argument("--report", help="write one JSON line per problem here")
    parser.set_defaults(func=lint)


def _add_load(actions: Any) -> None:
    """`datasets load FILE.jsonl`: validate and install a dataset for workers."""
    parser = actions.add_parser("load", help="validate a JSONL dataset and install it for workers by id")
    parser.add_argument("file", help="a JSONL file of problems (as `prepare` writes)")
    parser.add_argument("--id", dest="dataset_id", help="the dataset id (default: the file's stem)")
    parser.add_argument(
        "--dir", help="datasets directory (default: EVALFARM_DATASETS_DIR or ~/.local/share/...)"
    )
    parser.add_argument("--replace", action="store_true", help="overwrite a dataset of the same id")
    parser.add_argument("--max-problems", type=int, help="keep at most this many problems")
    parser.add_argument("--max-public", type=int, help="keep at most this many public tests per problem")
    parser.add_argument("--max-hidden", type=int, help="keep at most this many hidden tests per problem")
    parser.add_argument("--min-public", type=int, default=0, help="drop problems with fewer public tests")
    parser.set_defaults(func=load)


def _directory(args: argparse.Namespace) -> Any:
    """--dir, else the EVALFARM_DATASETS_DIR setting, else the default."""
    return resolve_datasets_dir(args.dir or os.environ.get("EVALFARM_DATASETS_DIR"))


def prepare(args: argparse.Namespace) -> int:
    """Run `datasets prepare`."""
    try:
        if args.kind == "codecontests":
            options = PrepareOptions(
                max_hidden=args.max_hidden,
                min_public=args.min_public,
                min_difficulty=args.min_difficulty,
                max_difficulty=args.max_difficulty,
                max_samples=args.max_samples,
                max_solutions=args.solutions or 0,
                checker=args.checker,
                time_scale=args.time_scale,
            )
            done = prepare_codecontests(args.source, args.out, options)
        else:
            source_options = SourceOptions(
                max_hidden=args.max_hidden,
                max_solutions=5 if args.solutions is None else args.solutions,
                max_samples=args.max_samples,
                checker=args.checker or "auto",
                time_scale=args.time_scale,
                special_judge=args.special_judge,
            )
            done = prepare_source(args.kind, args.source, args.out, source_options)
    except DatasetError as error:
        print(f"evalfarm datasets prepare: {error}", file=sys.stderr)
        return 2
    print(f"{done.written} problems written to {args.out} ({done.read} rows read)")
    for reason, count in done.skipped.most_common():
        print(f"  {count} skipped: {reason}")
    if done.tests_left_out:
        print(f"  {done.tests_left_out} hidden tests left out: past the farm's size caps of a problem")
    return 0


def load(args: argparse.Namespace) -> int:
    """Run `datasets load`."""
    caps = Caps(args.max_problems, args.max_public, args.max_hidden, args.min_public)
    directory = _directory(args)
    try:
        dataset_id, loaded = install_dataset(args.file, directory, args.dataset_id, caps, args.replace)
    except DatasetError as error:
        print(f"evalfarm datasets load: {error}", file=sys.stderr)
        return 2
    print(
        f"dataset {dataset_id!r}: {len(loaded.problems)} problems installed in {directory}"
        f" ({loaded.skipped} lines skipped)"
    )
    return 0


def list_datasets(args: argparse.Namespace) -> int:
    """Run `datasets list`: each installed dataset with its number of problems."""
    store = DatasetStore(_directory(args))
    store.refresh()
    for dataset_id in store.ids():
        print(f"{dataset_id}\t{store.size(dataset_id)} problems")
    return 0


def lint(args: argparse.Namespace) -> int:
    """Run `datasets lint`: one line per problem that is not clean, then the counts."""
    import contextlib
    import json

    from evalfarm.envs.codecontests.lint import FINDINGS, lint_jobs, lint_report
    from evalfarm.workers.commands.score import results_of

    try:
        with open(args.file, encoding="utf-8") as file:
            jobs, warnings = lint_jobs(file, args.max_problems)
    except OSError as error:
        print(f"evalfarm datasets lint: {args.file}: {error.strerror}", file=sys.stderr)
        return 2
    for warning in warnings[:10]:
        print(f"evalfarm datasets lint: skipped {warning}", file=sys.stderr)
    if not jobs:
        print(f"evalfarm datasets lint: {args.file} has no problem with solutions to judge", file=sys.stderr)
        return 0
    if not (args.broker or getattr(args, "local", False)):
        args.inline = True
    counts = dict.fromkeys(FINDINGS, 0)
    with contextlib.ExitStack() as stack:
        report = stack.enter_context(open(args.report, "w", encoding="utf-8")) if args.report else None
        results = stack.enter_context(results_of(args, jobs))
        for problem in lint_report(results):
            counts[problem.finding] += 1
            if report is not None:
                report.write(json.dumps(problem.to_dict()) + "\n")
            if problem.finding != "clean":
                why = f" ({problem.errors[0]})" if problem.errors else ""
                print(
                    f"{problem.finding}\t{problem.id}\tcorrect: {' '.join(problem.correct) or '-'}"
                    f"\tincorrect: {' '.join(problem.incorrect) or '-'}{why}"
                )
    summary = ", ".join(f"{finding} {count}" for finding, count in counts.items() if count)
    print(f"linted {sum(counts.values())} problems ({len(jobs)} solutions): {summary}", file=sys.stderr)
    return 0
