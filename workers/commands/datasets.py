"""`evalfarm datasets`: prepare problem sets, and install them where workers look them up by id.

    evalfarm datasets prepare codecontests --source PARQUET_FILE_OR_DIR --out FILE.jsonl
    evalfarm datasets load FILE.jsonl [--id ID] [--dir DIR] [--replace]
    evalfarm datasets list [--dir DIR]

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
from evalfarm.envs.datasets import Caps, DatasetError, DatasetStore, install_dataset, resolve_datasets_dir


def register(subparsers: Any) -> None:
    """Add `datasets` and its `prepare`, `load` and `list` subcommands."""
    parser = subparsers.add_parser("datasets", help="prepare and install problem datasets")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_prepare(actions)
    _add_load(actions)
    listing = actions.add_parser("list", help="the datasets installed for workers")
    listing.add_argument(
        "--dir", help="datasets directory (default: EVALFARM_DATASETS_DIR or ~/.local/share/...)"
    )
    listing.set_defaults(func=list_datasets)


def _add_prepare(actions: Any) -> None:
    """`datasets prepare codecontests`: parquet shards of deepmind/code_contests -> JSONL."""
    parser = actions.add_parser("prepare", help="convert a public dataset to the problem JSONL format")
    parser.add_argument("kind", choices=["codecontests"], help="the dataset's format")
    parser.add_argument("--source", required=True, help="a parquet file or a directory of them")
    parser.add_argument("--out", required=True, help="the JSONL file to write")
    parser.add_argument(
        "--max-hidden", type=int, default=50, help="hidden tests kept per problem (default 50)"
    )
    parser.add_argument("--min-public", type=int, default=1, help="drop problems with fewer public tests")
    parser.add_argument("--min-difficulty", type=int, help="drop problems below this difficulty")
    parser.add_argument("--max-difficulty", type=int, help="drop problems above this difficulty")
    parser.add_argument("--max-samples", type=int, help="stop after writing this many problems")
    parser.set_defaults(func=prepare)


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
    options = PrepareOptions(
        max_hidden=args.max_hidden,
        min_public=args.min_public,
        min_difficulty=args.min_difficulty,
        max_difficulty=args.max_difficulty,
        max_samples=args.max_samples,
    )
    try:
        read, written = prepare_codecontests(args.source, args.out, options)
    except DatasetError as error:
        print(f"evalfarm datasets prepare: {error}", file=sys.stderr)
        return 2
    print(f"{written} problems written to {args.out} ({read} rows read)")
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
