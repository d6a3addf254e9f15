"""`evalfarm run PROGRAM`: run one program in the sandbox, no queue, and print its result.

Its language comes from its suffix (`.py`, `.cpp`, `.c`, `.rs`, `.go`, `.java`, `.js`: the toolchain
table's, `sandbox/languages.py`) unless `--language` says (`pypy3` has no suffix of its own)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

LIMIT_FLAGS = {
    "wall_s": float,
    "cpu_s": float,
    "memory_mb": int,
    "output_bytes": int,
    "file_size_mb": int,
    "workdir_mb": int,
    "open_files": int,
    "processes": int,
    "compile_wall_s": float,
    "compile_memory_mb": int,
}
# The languages `--language` takes (sandbox.languages.NAMES, without importing the sandbox here).
LANGUAGES = ("python", "cpp", "c", "rust", "go", "java", "nodejs", "pypy3", "javascript")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `run` subcommand."""
    parser = subparsers.add_parser("run", help="run one program in the sandbox and print its result as JSON")
    parser.add_argument("program", type=Path, help="the program to run (its language by its suffix)")
    parser.add_argument("--stdin", type=Path, help="a file to feed on standard input")
    parser.add_argument(
        "--language", choices=LANGUAGES, help="the program's language (default: by its suffix)"
    )
    add_limit_flags(parser)
    parser.set_defaults(func=run)


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    """--wall-s, --cpu-s, ... overriding the env's default limits."""
    group = parser.add_argument_group("limits (override the defaults)")
    for name, kind in LIMIT_FLAGS.items():
        group.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, metavar=kind.__name__.upper())


def limit_overrides(args: argparse.Namespace) -> dict[str, float]:
    """The limit flags that were given."""
    return {name: getattr(args, name) for name in LIMIT_FLAGS if getattr(args, name) is not None}


def read_text(path: Path, what: str) -> str:
    """The text of `path`; SystemExit(2) with a one-line message when it cannot be read as UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        reason = "no such file"
    except IsADirectoryError:
        reason = "is a directory"
    except PermissionError:
        reason = "permission denied"
    except UnicodeDecodeError as error:
        reason = f"not UTF-8 text (byte {error.start})"
    except OSError as error:
        reason = f"cannot be read: {error.strerror or error}"
    print(f"evalfarm run: {what} {path}: {reason}", file=sys.stderr)
    raise SystemExit(2)


def run(args: argparse.Namespace) -> int:
    """Run the program and print the `program` result; exit 0 iff the status is ok."""
    from evalfarm.envs import Context, score_job
    from evalfarm.sandbox.languages import LANGUAGES as TABLE

    suffixes = {suffix: name for name, language in TABLE.items() for suffix in language.suffixes}

    job = {
        "id": args.program.name,
        "env": "program",
        "code": read_text(args.program, "program"),
        "stdin": read_text(args.stdin, "stdin file") if args.stdin else "",
        "language": args.language or suffixes.get(args.program.suffix.lower(), "python"),
        "limits": limit_overrides(args),
    }
    ctx = Context()
    try:
        result = score_job(job, ctx)
    finally:
        ctx.close()
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if result["status"] == "ok" else 1
