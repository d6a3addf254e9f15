"""Messages between a sandbox client and its fork server: a JSON header and the descriptors it names.

The channel is a SOCK_SEQPACKET socket pair, so a message is one header (small: limits, flags and
facts, never a job's bytes) with its descriptors attached (the run's memfds and, back, its output's).
"""

from __future__ import annotations

import enum
import json
import os
import socket
from typing import Any, TypedDict

MAX_HEADER_BYTES = 64 << 10  # well under a socket's send buffer: one message
MAX_FDS = 16


class Kind(enum.StrEnum):
    """What a request asks of its receiver: the header's `kind` (a string on the wire)."""

    RUN = "run"  # one program: Python forked from the server, or a native build (`native`)
    JUDGED = "judged"  # a candidate serving calls, and the judge that makes them (`judge`)
    INTERACTIVE = "interactive"  # a program and its interactor, each the other's stdin and stdout
    SESSION = "session"  # fork a session's interpreter, kept until its manager ends it
    CELL = "cell"  # to a session: run one cell (Python) or command (in a named bash shell)
    EXEC = "exec"  # to a shell session: run one program outside its shells
    SHELL = "shell"  # to a shell session: open or close a named shell
    FILE = "file"  # to a session: read, write or unpack its files


class RequestHeader(TypedDict, total=False):
    """A request's header, client to fork server: its `kind`, the run's `limits`, and what its kind
    needs (the facts that come back are the server's reply, a plain dict)."""

    kind: Kind
    limits: dict[str, Any]  # `Limits.to_dict()`
    mode: str  # a Python run's: "program", "call", "judge", "compile"
    reply_bytes: int  # a call's: the largest value it may return
    native: dict[str, Any]  # a native run's: `languages.native_request`'s spec
    judge: dict[str, Any]  # a judged run's: the judge's key
    candidate: dict[str, Any]  # an interactive run's members
    interactor: dict[str, Any]
    files: list[dict[str, Any]]  # a native run's files in its /tmp
    fetch: bool  # a Python run's: files come back (their names are in its payload)
    fds: list[str]  # the names of the descriptors sent with it (a session's cgroups', say)
    session_kind: str  # a session's: "python" (an interpreter) or "bash" (shells)
    workspace_mode: str  # a session's workspace: "overlay" (a cloned mount) or "copy" (a directory)


class ProtocolError(Exception):
    """The other side closed the channel or sent a malformed message."""


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of channels (client's end, server's end)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(
    sock: socket.socket, header: RequestHeader | dict[str, Any], fds: list[int] | tuple[int, ...] = ()
) -> None:
    """Send one message: `header` and `fds` (the receiver gets copies; ours stay open)."""
    data = json.dumps(header).encode()
    if len(data) > MAX_HEADER_BYTES:
        raise ProtocolError(f"a header of {len(data)} bytes is too large")
    socket.send_fds(sock, [data], list(fds))


def recv(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """Receive one message: its header and its descriptors (now the caller's to close)."""
    data, fds, flags, _ = socket.recv_fds(sock, MAX_HEADER_BYTES, MAX_FDS)
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        _close(fds)
        raise ProtocolError("a message larger than the channel allows")
    if not data:
        _close(fds)
        raise ProtocolError("channel closed")
    try:
        header = json.loads(data)
    except ValueError as error:
        _close(fds)
        raise ProtocolError(f"a malformed header: {error}") from None
    return header, fds


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
