"""File I/O problems: a program that reads its test from a file and writes its answer to one.

Old Codeforces rounds read `input.txt` and write `output.txt` (open-r1/codeforces' `input_mode:
file`, deepmind/code_contests' `input_file` and `output_file`). Such a problem's test runs with its
input in that file, in the run's working directory, and its answer is what the program left in the
output file, fetched once the run is over: the sandbox's `files` and `fetch`, as a `program` job's,
in every language and under the same walls. A side the problem does not name is stdin or stdout.
As open-r1's Codeforces runner does, the program's stdin is empty and its stdout is not the answer
when the problem names the files; with `stdio` (a judge that allows both) the input is on stdin too,
and stdout answers when the output file is left empty.

The answer file is capped as stdout is (`output_bytes`), and no file of the run may pass what the
sandbox fetches back (ANSWER_FILE_CAP, by the run's `file_size_mb`): a longer answer is
`output_limit`. The checker gets the file's content.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from typing import Any

from evalfarm.envs.datasets import ProblemFiles
from evalfarm.limits import Limits
from evalfarm.sandbox.run_result import RunResult
from evalfarm.status import Status

ANSWER_FILE_CAP = 8 << 20  # what a run's fetched files may weigh in all (sandbox._child.FETCH_MAX_BYTES)


def file_limits(limits: Limits) -> Limits:
    """A file I/O problem's limits: no file larger than what the sandbox fetches back."""
    return dataclasses.replace(limits, file_size_mb=min(limits.file_size_mb, ANSWER_FILE_CAP >> 20))


def run_with_files(
    sandbox: Any, code: str, given: str, files: ProblemFiles, limits: Limits, language: str
) -> tuple[RunResult, bytes]:
    """The program's run on one test of a file I/O problem, and its answer (the output file's
    content, or its stdout where the problem says so)."""
    data = given.encode("utf-8")
    stdin = data if files.input is None or files.stdio else b""
    written = {files.input: base64.b64encode(data).decode()} if files.input else None
    fetch = [files.output] if files.output else None
    # An input larger than the file cap is still the test's: the run may write it.
    size_mb = max(limits.file_size_mb, math.ceil(len(data) / (1 << 20)))
    run_limits = dataclasses.replace(limits, file_size_mb=size_mb)
    run = sandbox.run(code, stdin=stdin, limits=run_limits, files=written, fetch=fetch, language=language)
    if files.output is None:
        return run, run.stdout
    answer = base64.b64decode((run.files or {}).get(files.output) or "")
    if not answer and files.stdio:
        answer = run.stdout
    return _capped(run, answer, run_limits), answer


def _capped(run: RunResult, answer: bytes, limits: Limits) -> RunResult:
    """`run`, or its output limit when the answer file reached the cap of a file (where a longer one
    was cut) or passed `output_bytes`."""
    cap = min(limits.output_bytes, (limits.file_size_mb << 20) - 1)
    if run.status is not Status.OK or len(answer) <= cap:
        return run
    why = f"the output file reached {len(answer)} bytes (cap {cap})"
    return dataclasses.replace(run, status=Status.OUTPUT_LIMIT, error=why)
