"""Inside a session: its files read, written and unpacked for its manager, by the session's own
process under the session's own walls, and confined to the session's own file system: its `/tmp`,
and `/workspace` when it has one. A relative path is relative to its home (`/workspace` when there
is one, else `/tmp`).

Refused, each with its reason (a report `error` with an `ename`, as Python names the error): a path
outside those roots or with a `..` (PermissionError), a path through a symbolic link, or naming
one (PermissionError: a link could lead anywhere in the session's view), a file larger than the
request's cap (ValueError), an archive that `evalfarm.archive` refuses (ValueError), a full disk
(OSError, naming the session's `workdir_mb`). A missing file is FileNotFoundError, a directory
read as a file IsADirectoryError, as `open` says them.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

from evalfarm import archive
from evalfarm.sandbox import _payload

ROOTS = ("/tmp", "/workspace")
WORKSPACE = "/workspace"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(Exception):
    """A file request the session does not serve: `ename` names it as Python's errors do."""

    def __init__(self, ename: str, message: str) -> None:
        super().__init__(message)
        self.ename = ename


def home() -> str:
    """Where a session starts, and relative paths lead: its workspace, else its /tmp."""
    return WORKSPACE if os.path.ismount(WORKSPACE) else "/tmp"


def handle(header: dict[str, Any], fds: list[int]) -> dict[str, Any]:
    """One file request (`op` read, write or upload; `path`); its report. `fds`: the content in
    (a memfd) and the content out (a memfd the manager reads)."""
    op, path = header.get("op"), str(header.get("path", ""))
    try:
        if op == "read":
            return _read(path, fds[1], int(header["max_bytes"]))
        if op == "write":
            return _write(path, _payload.read_fd(fds[0]))
        if op == "upload":
            caps = archive.Caps(int(header["max_bytes"]), int(header["max_members"]))
            return _upload(path, _payload.read_fd(fds[0]), caps)
        raise Refused("ValueError", f"unknown file operation {op!r}")
    except Refused as error:
        return _error(error.ename, str(error))
    except archive.ArchiveRefused as error:
        return _error("ValueError", f"the archive was refused: {error}")
    except OSError as error:
        return _os_error(error, path)


def _error(ename: str, message: str) -> dict[str, Any]:
    return {"error": {"ename": ename, "evalue": message}}


def _os_error(error: OSError, path: str) -> dict[str, Any]:
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return _error("OSError", f"{path}: the session's disk is full (its workdir_mb, or file_size_mb)")
    names = {
        errno.ENOENT: "FileNotFoundError", errno.EISDIR: "IsADirectoryError",
        errno.ENOTDIR: "NotADirectoryError", errno.EACCES: "PermissionError",
        errno.EPERM: "PermissionError", errno.EEXIST: "FileExistsError",
    }  # fmt: skip
    return _error(names.get(error.errno or 0, "OSError"), f"{path}: {error.strerror}")


def parts_of(path: str) -> list[str]:
    """`path`'s parts from the root: within ROOTS, no `..`; Refused otherwise."""
    if not path or "\x00" in path:
        raise Refused("PermissionError", f"{path!r}: not a path")
    absolute = path if path.startswith("/") else f"{home()}/{path}"
    parts = [part for part in absolute.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise Refused("PermissionError", f"{path}: a path with '..' is refused")
    if not parts or f"/{parts[0]}" not in ROOTS or (parts[0] == "workspace" and home() != WORKSPACE):
        raise Refused("PermissionError", f"{path}: outside the session's files ({home()} and below)")
    return parts


def _walk(path: str, create: bool) -> tuple[int, str]:
    """The directory holding `path`'s last part (opened, never through a link; made where missing
    when `create`), and that part ("" for a root itself)."""
    parts = parts_of(path)
    fd = os.open(f"/{parts[0]}", _DIR_FLAGS)
    for part in parts[1:-1]:
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                os.close(fd)
                raise
            os.mkdir(part, 0o755, dir_fd=fd)
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as error:
            link = error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd)
            os.close(fd)
            if link:
                raise Refused("PermissionError", f"{path}: passes through a symbolic link") from None
            raise
        os.close(fd)
        fd = child
    return fd, parts[-1] if len(parts) > 1 else ""


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_leaf(parent: int, leaf: str, flags: int, path: str) -> int:
    try:
        return os.open(leaf, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent)
    except OSError as error:
        if error.errno == errno.ELOOP or _is_link(leaf, parent):
            raise Refused("PermissionError", f"{path}: a symbolic link (read or write its target)") from None
        raise


def _read(path: str, out_fd: int, max_bytes: int) -> dict[str, Any]:
    parent, leaf = _walk(path, create=False)
    try:
        if not leaf:
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        fd = _open_leaf(parent, leaf, os.O_RDONLY, path)
    finally:
        os.close(parent)
    try:
        facts = os.fstat(fd)
        if stat.S_ISDIR(facts.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        if facts.st_size > max_bytes:
            raise Refused("ValueError", f"{path}: {facts.st_size} bytes; the cap is {max_bytes}")
        copied = 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - copied)):
            copied += len(chunk)
            if copied > max_bytes:  # it grew while read
                raise Refused("ValueError", f"{path}: more than {max_bytes} bytes, the cap")
            view = memoryview(chunk)
            while view:
                view = view[os.write(out_fd, view) :]
    finally:
        os.close(fd)
    return {"bytes": copied}


def _write(path: str, content: bytes) -> dict[str, Any]:
    parent, leaf = _walk(path, create=True)
    try:
        if not leaf:
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        fd = _open_leaf(parent, leaf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, path)
    finally:
        os.close(parent)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return {"bytes": len(content)}


def _upload(path: str, data: bytes, caps: archive.Caps) -> dict[str, Any]:
    """Unpack an archive into the directory `path` (made where missing)."""
    parent, leaf = _walk(path, create=True)
    try:
        if leaf:
            try:
                os.mkdir(leaf, 0o755, dir_fd=parent)
            except FileExistsError:
                pass
            target = _open_leaf(parent, leaf, os.O_RDONLY | os.O_DIRECTORY, path)
        else:
            target = os.dup(parent)
    finally:
        os.close(parent)
    try:
        done = archive.unpack(data, target, caps)
    finally:
        os.close(target)
    return {"members": done.members, "bytes": done.bytes}
