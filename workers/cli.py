"""The `evalfarm` command line: one module per subcommand under workers/commands/."""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import sys

# Subcommand modules, each with `register(subparsers)` adding its parser with `func` as default.
# Imported lazily by name so `evalfarm run` never pays for Celery or MinAtar.
COMMANDS = ("run", "score", "datasets", "verify", "up", "worker", "gateway", "demo")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The top-level parser, with only the subcommand named in `argv` imported (all for --help)."""
    parser = argparse.ArgumentParser(prog="evalfarm", description="An evaluation farm for untrusted code.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = [name for name in COMMANDS if name in argv[:3]] or list(COMMANDS)
    for name in wanted:
        try:
            module = importlib.import_module(f"workers.commands.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"workers.commands.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        code = int(args.func(args) or 0)
    except BrokenPipeError:  # the reader of our output went away (`| head`): as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    # The interpreter's shutdown collections would walk every object of every imported module
    # (pydantic's make that about 15 ms); frozen, they are skipped. Nothing here outlives the process.
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(main())
