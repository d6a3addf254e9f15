"""A stand-in for the sandbox in unit tests of the code envs: runs trusted test programs in-process."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

from sandbox.limits import Limits
from sandbox.result import RunResult
from sandbox.status import Status


class FakeSandbox:
    """Execs `code` in this process with `stdin`; records every call. Only for programs the tests wrote.

    A program containing "# STATUS:<name>" is reported with that status without running, so tests can
    produce timeouts and infra errors cheaply.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def run(
        self, code: str, stdin: bytes | str = b"", limits: Limits | None = None, call: Any = None
    ) -> RunResult:
        """A RunResult as the real sandbox would give for these simple programs."""
        self.calls.append({"code": code, "stdin": stdin, "limits": limits, "call": call})
        if "# STATUS:" in code:
            name = code.split("# STATUS:")[1].split()[0]
            return RunResult(Status[name], error=f"fake {name}")
        try:
            compiled = compile(code, "<program>", "exec")
        except SyntaxError as error:
            return RunResult(Status.SYNTAX_ERROR, stderr=str(error).encode(), error="SyntaxError")
        return self._exec(compiled, stdin)

    @staticmethod
    def _exec(compiled: Any, stdin: bytes | str) -> RunResult:
        """Run `compiled` with redirected standard streams."""
        text = stdin.decode() if isinstance(stdin, bytes) else stdin
        out, err = io.StringIO(), io.StringIO()
        saved = sys.stdin
        sys.stdin = io.StringIO(text)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(compiled, {"__name__": "__main__"})
        except Exception as error:
            err.write(f"Traceback (most recent call last):\n{type(error).__name__}: {error}\n")
            return RunResult(
                Status.RUNTIME_ERROR, out.getvalue().encode(), err.getvalue().encode(), exit_code=1
            )
        finally:
            sys.stdin = saved
        return RunResult(
            Status.OK, out.getvalue().encode(), err.getvalue().encode(), exit_code=0, completed=True
        )
