"""Reading a JSONL file of jobs for the command line: every line becomes a job or its own answer.

A file that cannot be read at all (missing, a directory, no permission) is an `InputError` with a
message for the user. Inside a readable file, a line that cannot be a job (invalid UTF-8, longer than
`MAX_LINE_BYTES`, not JSON) is answered `invalid_job` in its place and the other lines are scored:
one result per non-blank line, in order, and never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

MAX_LINE_BYTES = 64 << 20  # a CodeContests problem with its hidden tests inline fits many times over
_SKIP_CHUNK = 1 << 20


class InputError(Exception):
    """The jobs file cannot be read at all; the message says why."""


@dataclasses.dataclass(frozen=True)
class BadLine:
    """A line that never became a job, and why: answered as it is, never sent."""

    error: str

    def result(self) -> dict[str, Any]:
        """Its answer: the contract's invalid_job result."""
        return {"id": None, "env": None, "status": "invalid_job", "code": 10, "reward": None,
                "error": self.error}  # fmt: skip


Line = str | BadLine


def read_jobs_file(path: str) -> list[Line]:
    """The non-blank lines of `path` ('-' for standard input), each as text or a BadLine."""
    if path == "-":
        return list(read_lines(sys.stdin.buffer))
    try:
        with open(path, "rb") as handle:
            return list(read_lines(handle))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a JSONL file of jobs") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read: {error.strerror or error}") from None


def read_lines(handle: IO[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[Line]:
    """Each non-blank line of a binary stream: its text, or a BadLine (not UTF-8, over the cap)."""
    number = 0
    while True:
        raw = handle.readline(max_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            _skip_rest_of_line(handle)
            yield BadLine(f"line {number} is longer than the cap of {max_bytes} bytes")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            yield BadLine(f"line {number} is not valid UTF-8 (byte {error.start})")
            continue
        if text.strip():
            yield text


def _skip_rest_of_line(handle: IO[bytes]) -> None:
    while True:
        chunk = handle.readline(_SKIP_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return


def parse(line: Line) -> Any:
    """The job on a line, or a BadLine when the line is not JSON."""
    if isinstance(line, BadLine):
        return line
    try:
        return json.loads(line)
    except ValueError as error:
        return BadLine(f"line is not valid JSON: {error}")
    except RecursionError:
        return BadLine("line is not valid JSON: nested too deeply")


Results = Iterable[dict[str, Any]]


def in_place(items: list[Any], score: Callable[[list[Any]], Results]) -> Iterator[dict[str, Any]]:
    """Results for `items` in order: `score(the items that are not BadLines)` yields theirs, in
    order; each BadLine's own answer is put back in its place."""
    good = [item for item in items if not isinstance(item, BadLine)]
    results = iter(score(good))
    for item in items:
        yield item.result() if isinstance(item, BadLine) else next(results)
