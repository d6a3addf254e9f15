"""Calls across the sandbox wall: a judge calls the candidate's functions, and only data comes back.

The candidate runs in its own sandboxed process and serves calls (`serve`): each request names a
function and carries its arguments, each reply carries the return value, or the exception it
raised, encoded by `sandbox.values`. The judge (a test's asserts, in another sandboxed process that
never runs candidate code) holds proxies (`Candidate.function`) that look like the candidate's
functions. Whatever the candidate does to its own process, the judge receives plain values or a
failure; it never receives an object, a frame or a byte of code.

Frames: a 4-byte big-endian length, then that many bytes. Requests: `["call", name, args, kwargs]`;
replies: `["return", value]`, `["raise", exception type name, message, the builtin type it derives
from]` (`sandbox.raised`: the judge raises an exception it makes from these strings, never the
candidate's object nor its arguments) or `["bad", why]` (the value could not be encoded). A value
nests at most `values.MAX_DEPTH` deep whichever way it goes, so whatever the judge received it can
pass back: a frame's own levels are counted apart (`REPLY_DEPTH`, `REQUEST_DEPTH`).
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Callable
from typing import Any

from evalfarm.sandbox import raised, values

_LENGTH = struct.Struct(">I")
MAX_REPLY_BYTES = 1 << 20  # one encoded return value, by default
MAX_MESSAGE_CHARS = raised.MAX_MESSAGE_CHARS  # of a raised exception's message
REPLY_DEPTH = values.MAX_DEPTH + 1  # ["return", value]
REQUEST_DEPTH = values.MAX_DEPTH + 2  # ["call", name, [value, ...], {name: value}]


class CandidateGone(BaseException):
    """The candidate's process ended (or stopped answering) before the call returned.

    A BaseException, so that a test's `except Exception` cannot swallow it.
    """


class CandidateError(Exception):
    """The candidate's reply could not be used: too large, malformed, or not encodable."""


# The candidate's own exceptions, as the judge raises them (see sandbox.raised).
CandidateRaised = raised.CandidateRaised
CandidateExit = raised.CandidateExit


class JudgeError(BaseException):
    """The judge itself failed: it passed an argument that cannot cross as data."""


# -- frames ---------------------------------------------------------------------------------------


def write_frame(fd: int, data: bytes) -> None:
    """Write one frame to `fd` (a pipe); OSError when the other end is gone."""
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def read_frame(fd: int, max_bytes: int) -> bytes | None:
    """One frame from `fd`; None at end of file. Raises CandidateError past `max_bytes`."""
    head = _read_exact(fd, _LENGTH.size)
    if head is None:
        return None
    (size,) = _LENGTH.unpack(head)
    if size > max_bytes:
        raise CandidateError(f"a reply of {size} bytes is over the cap of {max_bytes}")
    body = _read_exact(fd, size)
    if body is None:
        return None
    return body


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        try:
            chunk = os.read(fd, min(size, 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


# -- the candidate's side -------------------------------------------------------------------------


def serve(namespace: dict[str, Any], requests_fd: int, replies_fd: int, max_request_bytes: int) -> None:
    """Answer calls into `namespace` until the requests end."""
    while True:
        try:
            request = read_frame(requests_fd, max_request_bytes)
        except CandidateError:
            return
        if request is None:
            return
        reply = answer(namespace, request, print_exceptions=True)
        _flush_output()
        try:
            write_frame(replies_fd, reply)
        except OSError:
            return


def _flush_output() -> None:
    """What the call printed, out before its reply: once the judge has the reply it may finish, and
    the run is ended."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def answer(namespace: dict[str, Any], request: bytes, print_exceptions: bool = False) -> bytes:
    """The encoded reply to one encoded request (`print_exceptions`: a raise's traceback on stderr)."""
    try:
        _, name, args, kwargs = values.decode(request, max_depth=REQUEST_DEPTH)
        function = namespace.get(name)
    except (values.DecodeError, ValueError, TypeError) as error:
        return values.encode(["bad", f"a malformed request: {error}"])
    if not callable(function):
        message = f"name {name!r} is not defined as a function"
        return values.encode(["raise", "NameError", message, "NameError"])
    try:
        value = function(*args, **kwargs)
    except BaseException as error:
        if print_exceptions:
            _print_traceback(error)
        return values.encode(["raise", *raised.crossing(error)])
    try:
        return values.encode(["return", value], max_depth=REPLY_DEPTH)
    except values.Unencodable as error:
        return values.encode(["bad", str(error)])


def _print_traceback(error: BaseException) -> None:
    import traceback

    try:
        frames = error.__traceback__
        traceback.print_exception(type(error), error, frames.tb_next if frames else None, file=sys.stderr)
    except BaseException:
        pass


def describe(error: BaseException) -> str:
    """`Type: message` of an exception, whatever its message does (a judge reporting a candidate's
    exception must not fail on it: an int too long to print, a message that raises); a candidate's
    exception by the name of its own type."""
    name = type(error).__name__
    if isinstance(error, CandidateRaised | CandidateExit):
        name = str(getattr(error, "type_name", name))
    try:
        message = str(error)
    except BaseException:  # the message is the candidate's
        return name
    return f"{name}: {message}"[:MAX_MESSAGE_CHARS] if message else name


# -- the judge's side -----------------------------------------------------------------------------


class Candidate:
    """The judge's connection to the candidate's process; `function(name)` is a callable proxy.

    `on_first_call` runs once, before the first request leaves: from then on what the judge does
    may depend on the candidate's replies, so a judge that fails after it is not shown faulty by
    that failure alone (`sandbox.verdict.classify_judged`).
    """

    def __init__(
        self,
        requests_fd: int,
        replies_fd: int,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        on_first_call: Callable[[], None] | None = None,
    ) -> None:
        self.requests_fd = requests_fd
        self.replies_fd = replies_fd
        self.max_reply_bytes = max_reply_bytes
        self.on_first_call = on_first_call
        self.gone = False  # set for good the first time the candidate fails to answer
        self.calls = 0
        self.failures: list[str] = []  # what went wrong with replies (not encodable, malformed, ...)
        self.raised: list[BaseException] = []  # the candidate's exceptions, as raised here

    def function(self, name: str) -> Any:
        """A callable that calls the candidate's `name` with the same arguments."""

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, args, kwargs)

        call.__name__ = call.__qualname__ = name
        return call

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call `name` in the candidate; its value, or its exception raised here."""
        if self.gone:
            raise CandidateGone("the program is no longer running")
        try:
            request = values.encode(["call", name, list(args), kwargs], max_depth=REQUEST_DEPTH)
        except values.Unencodable as error:
            raise JudgeError(f"the test passed an argument that cannot cross as data: {error}") from None
        if not self.calls and self.on_first_call is not None:
            self.on_first_call()
        self.calls += 1
        reply = self._exchange(request)
        try:
            kind, *rest = values.decode(reply, max_depth=REPLY_DEPTH)
        except (values.DecodeError, ValueError) as error:
            raise self._failure(f"a malformed reply ({error})") from None
        if kind == "return" and len(rest) == 1:
            return rest[0]
        if kind == "raise" and len(rest) == 3:
            self.raised.append(raised.rebuild(*rest))
            raise self.raised[-1]
        if kind == "bad" and len(rest) == 1:
            raise self._failure(f"its return value {rest[0]}"[:MAX_MESSAGE_CHARS])
        raise self._failure("a malformed reply")

    def _exchange(self, request: bytes) -> bytes:
        try:
            write_frame(self.requests_fd, request)
            reply = read_frame(self.replies_fd, self.max_reply_bytes)
        except OSError:
            reply = None
        except CandidateError as error:
            self.gone = True  # the rest of the oversized frame is still in the pipe
            raise self._failure(str(error)) from None
        if reply is None:
            self.gone = True
            raise CandidateGone("the program ended during a call")
        return reply

    def _failure(self, why: str) -> CandidateError:
        self.failures.append(why)
        return CandidateError(why)


# -- a reply read outside the sandbox ---------------------------------------------------------------


class Reply:
    """A call's outcome as data: `value` when it returned, else `error` (why it counts as failed)."""

    def __init__(self, value: Any = None, error: str | None = None, raised: str | None = None) -> None:
        self.value = value
        self.error = error
        self.raised = raised  # the exception type name, when the function raised

    @property
    def returned(self) -> bool:
        """True when the function returned a value that crossed whole."""
        return self.error is None


def parse_reply(data: bytes | None, json_compatible: bool = False) -> Reply:
    """A call's encoded reply (`RunResult.reply`); never raises: bad bytes are a failed call."""
    if not data:
        return Reply(error="the program ended before its function returned a value")
    try:
        (size,) = _LENGTH.unpack_from(data)
        body = data[_LENGTH.size :]
        if size != len(body):
            return Reply(error="the returned value did not come back whole")
        kind, *rest = values.decode(body, json_compatible=json_compatible, max_depth=REPLY_DEPTH)
    except (struct.error, ValueError, TypeError) as error:
        return Reply(error=f"the returned value cannot cross as data ({error})"[:MAX_MESSAGE_CHARS])
    if kind == "return" and len(rest) == 1:
        return Reply(value=rest[0])
    if kind == "raise" and len(rest) == 3 and type(rest[0]) is str and type(rest[1]) is str:
        message = f"{rest[0]}: {rest[1]}" if rest[1] else rest[0]
        return Reply(error=message[:MAX_MESSAGE_CHARS], raised=rest[0])
    if kind == "bad" and len(rest) == 1 and type(rest[0]) is str:
        return Reply(error=f"the returned value cannot cross as data: {rest[0]}"[:MAX_MESSAGE_CHARS])
    return Reply(error="the returned value cannot cross as data (a malformed reply)")
