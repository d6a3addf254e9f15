"""Archives unpacked without trusting them: a tar (plain or compressed) or a zip, read member by
member into a directory, refused whole with the reason at the first member that could leave it.

Refused: an absolute path, a `..`, a name with a NUL or no name at all, a hard link, a device or a
FIFO, a symbolic link whose target is absolute or climbs out of the tree, a member under a link
(each directory is opened with O_NOFOLLOW, so no member is ever written through a link, wherever
the link points), more members or more bytes than the caps. Bytes are counted as they are written,
never taken from the archive's own headers, so a zip bomb stops at the cap. Modes keep only the
owner's execute bit, as read and execute for everyone (no setuid, no sticky bit): the files are
meant to be read by a sandbox's own uid.

Stdlib only: the session's own process unpacks uploads with it, inside its walls, and a node its
workspaces. tarfile and zipfile are imported when an archive is read, not with this module: the
fork servers preload it, and zipfile imports threading, whose after-fork hook every run would pay.
"""

from __future__ import annotations

import dataclasses
import io
import os
import posixpath
import stat
from collections.abc import Iterator
from typing import IO, Any

CHUNK_BYTES = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class ArchiveRefused(ValueError):
    """The archive cannot be unpacked as it is; the message says which member and why."""


@dataclasses.dataclass(frozen=True)
class Caps:
    """What one archive may hold once unpacked."""

    max_bytes: int = 256 << 20
    max_members: int = 100_000


@dataclasses.dataclass
class Unpacked:
    """What an archive held: its members and the bytes of its files."""

    members: int = 0
    bytes: int = 0


@dataclasses.dataclass(frozen=True)
class _Member:
    name: str  # normalised: relative, no "." or ".." parts
    kind: str  # "file", "dir", "symlink"
    mode: int
    mtime: float | None
    link: str = ""  # a symlink's target
    source: IO[bytes] | None = None  # a file's content, read in chunks


def format_of(data: bytes) -> str:
    """ "zip" or "tar" (tar also when compressed); ArchiveRefused when it is neither."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    import tarfile

    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            archive.next()
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        raise ArchiveRefused(f"not a tar or zip archive ({error})") from None
    return "tar"


def check(data: bytes, caps: Caps = Caps()) -> Unpacked:
    """Read the whole archive as `unpack` would, writing nothing; what it holds, or ArchiveRefused."""
    found = Unpacked()
    links: set[str] = set()
    dirs: set[str] = set()
    for member in _members(data, caps):
        found.members += 1
        parents = ["/".join(member.name.split("/")[:depth]) for depth in range(1, member.name.count("/") + 1)]
        for parent in parents:
            if parent in links:
                raise ArchiveRefused(f"{member.name!r}: under {parent!r}, which is not a directory (a link)")
        if member.kind == "symlink" and member.name in dirs:
            raise ArchiveRefused(f"{member.name!r}: a symlink over a directory")
        dirs.update(parents)
        (links if member.kind == "symlink" else dirs if member.kind == "dir" else set()).add(member.name)
        if member.source is not None:
            found.bytes += _drain(member, caps.max_bytes - found.bytes, None)
    return found


def unpack(data: bytes, directory_fd: int, caps: Caps = Caps()) -> Unpacked:
    """Unpack `data` into the directory open as `directory_fd`; what it held. Files already there
    are replaced (never through a link); ArchiveRefused at the first member that may not be
    written, with what came before it left in place; OSError when the disk is full."""
    done = Unpacked()
    for member in _members(data, caps):
        done.members += 1
        parent, leaf = _parent(directory_fd, member.name)
        try:
            done.bytes += _write(parent, leaf, member, caps.max_bytes - done.bytes)
        finally:
            if parent != directory_fd:
                os.close(parent)
    return done


def safe_name(name: str) -> str:
    """`name` as a relative path inside the tree ("a/b", no "." parts); ArchiveRefused otherwise."""
    if not name or "\x00" in name:
        raise ArchiveRefused(f"a member with an empty or NUL name: {name!r}")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveRefused(f"{name!r}: an absolute path")
    parts = [part for part in name.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveRefused(f"{name!r}: a path with '..'")
    if not parts:
        return "."
    return "/".join(parts)


def _members(data: bytes, caps: Caps) -> Iterator[_Member]:
    """The archive's members, checked one by one, within the count cap."""
    reader = _zip_members if format_of(data) == "zip" else _tar_members
    for count, member in enumerate(reader(data), start=1):
        if count > caps.max_members:
            raise ArchiveRefused(f"more than {caps.max_members} members (the cap)")
        if member.kind == "symlink":
            _check_link(member)
        yield member


def _tar_members(data: bytes) -> Iterator[_Member]:
    import tarfile

    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for info in archive:
                yield _tar_member(archive, info)
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        if isinstance(error, ArchiveRefused):
            raise
        raise ArchiveRefused(f"the tar archive is damaged ({error})") from None


def _tar_member(archive: Any, info: Any) -> _Member:
    name = safe_name(info.name)
    mtime = float(info.mtime) if isinstance(info.mtime, int | float) else None
    if info.isreg():
        return _Member(name, "file", info.mode, mtime, source=archive.extractfile(info))
    if info.isdir():
        return _Member(name, "dir", info.mode, mtime)
    if info.issym():
        return _Member(name, "symlink", 0o777, mtime, link=info.linkname)
    what = "a hard link" if info.islnk() else "a device or FIFO"
    raise ArchiveRefused(f"{info.name!r}: {what} (only files, directories and links inside are taken)")


def _zip_members(data: bytes) -> Iterator[_Member]:
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                yield _zip_member(archive, info)
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        OSError,
        ValueError,
        NotImplementedError,
    ) as error:
        if isinstance(error, ArchiveRefused):
            raise
        raise ArchiveRefused(f"the zip archive is damaged ({error})") from None


def _zip_member(archive: Any, info: Any) -> _Member:
    name = safe_name(info.filename)
    mode = info.external_attr >> 16
    mtime = None
    if info.is_dir():
        return _Member(name, "dir", mode or 0o755, mtime)
    if stat.S_ISLNK(mode):
        with archive.open(info) as source:
            target = source.read(4096).decode("utf-8", "replace")
        return _Member(name, "symlink", 0o777, mtime, link=target)
    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # a zip writer may give no type bits at all
        raise ArchiveRefused(
            f"{info.filename!r}: a device or FIFO (only files, directories and links are taken)"
        )
    return _Member(name, "file", mode or 0o644, mtime, source=archive.open(info))


def _check_link(member: _Member) -> None:
    """A link must name a place inside the tree, relative to where it is."""
    target = member.link
    if not target or "\x00" in target or target.startswith("/"):
        raise ArchiveRefused(f"{member.name!r}: a link to {target!r}, outside the tree")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(member.name), target))
    if resolved == ".." or resolved.startswith("../"):
        raise ArchiveRefused(f"{member.name!r}: a link to {target!r}, outside the tree")


def _parent(root_fd: int, name: str) -> tuple[int, str]:
    """The directory `name` goes in (made where missing, never through a link), and its leaf."""
    *dirs, leaf = name.split("/")
    fd = root_fd
    for part in dirs:
        try:
            os.mkdir(part, 0o755, dir_fd=fd)
        except FileExistsError:
            pass
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            if fd != root_fd:
                os.close(fd)
            raise ArchiveRefused(
                f"{name!r}: under {part!r}, which is not a directory (a link or a file)"
            ) from None
        if fd != root_fd:
            os.close(fd)
        fd = child
    return fd, leaf


def _write(parent: int, leaf: str, member: _Member, budget: int) -> int:
    """Write one member in `parent`; the bytes it took."""
    if leaf == ".":
        return 0
    if member.kind == "dir":
        try:
            os.mkdir(leaf, _mode(member.mode, directory=True), dir_fd=parent)
        except FileExistsError:
            if not stat.S_ISDIR(os.stat(leaf, dir_fd=parent, follow_symlinks=False).st_mode):
                raise ArchiveRefused(f"{member.name!r}: a directory over a file or link") from None
        return 0
    _remove_link(parent, leaf, member)
    if member.kind == "symlink":
        os.symlink(member.link, leaf, dir_fd=parent)
        return 0
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(leaf, flags, _mode(member.mode, directory=False), dir_fd=parent)
    try:
        written = _drain(member, budget, fd)
        os.fchmod(fd, _mode(member.mode, directory=False))
        if member.mtime is not None:
            os.utime(fd, (member.mtime, member.mtime))
    finally:
        os.close(fd)
    return written


def _remove_link(parent: int, leaf: str, member: _Member) -> None:
    """A link already at `leaf` is removed, never written through (and a file, where a link is to
    take its place); a directory is never replaced."""
    try:
        mode = os.stat(leaf, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise ArchiveRefused(f"{member.name!r}: a {member.kind} over a directory")
    if stat.S_ISLNK(mode) or member.kind == "symlink":
        os.unlink(leaf, dir_fd=parent)


def _drain(member: _Member, budget: int, fd: int | None) -> int:
    """Copy a file member's bytes into `fd` (or count them only); ArchiveRefused past `budget`."""
    assert member.source is not None
    total = 0
    while chunk := member.source.read(CHUNK_BYTES):
        total += len(chunk)
        if total > budget:
            raise ArchiveRefused(f"{member.name!r}: the archive holds more bytes than the cap allows")
        if fd is not None:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
    return total


def _mode(mode: int, directory: bool) -> int:
    executable = directory or bool(mode & stat.S_IXUSR)
    return 0o755 if executable else 0o644
