"""Landlock: unprivileged access control the kernel enforces on a process and its children.

The sandbox uses it to forbid writes outside the run's working directory, every TCP bind and
connect, and (ABI 6+) signals and abstract UNIX sockets that would reach outside the run.
"""

from __future__ import annotations

import dataclasses
import os
import struct

from evalfarm.sandbox import _linux

_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

_WRITE_FILE = 1 << 1
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1

_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE

# Where a run may write: its own /tmp, and the harmless devices.
WRITABLE_DIRS = ("/tmp",)
WRITABLE_FILES = ("/dev/null", "/dev/full", "/dev/zero")


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    try:
        return _linux.syscall(_linux.NR_LANDLOCK_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except OSError:
        return 0


def _write_rights(abi: int) -> int:
    rights = (
        _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG
        | _MAKE_SOCK | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM
    )  # fmt: skip
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


@dataclasses.dataclass(frozen=True)
class Policy:
    """What a ruleset handles on this kernel's ABI, and the rights its rules grant."""

    attr_bytes: int  # the size of `struct landlock_ruleset_attr` this ABI reads
    handled_fs: int
    handled_net: int
    scoped: int
    file_rights: int  # granted on the writable files (the writable dirs get all of handled_fs)


def policy(abi: int) -> Policy:
    """Writes handled (all of them), TCP bind and connect (ABI 4+), signals and abstract UNIX
    sockets scoped to the run (ABI 6+)."""
    handled_fs = _write_rights(abi)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr_bytes = 24 if abi >= 6 else 16 if abi >= 4 else 8
    return Policy(attr_bytes, handled_fs, net, scoped, handled_fs & _FILE_RIGHTS)


def ruleset(
    abi: int, writable_dirs: tuple[str, ...] = WRITABLE_DIRS, writable_files: tuple[str, ...] = WRITABLE_FILES
) -> int:
    """A ruleset fd allowing writes only beneath `writable_dirs` and to `writable_files`."""
    rules = policy(abi)
    attr = struct.pack("QQQ", rules.handled_fs, rules.handled_net, rules.scoped)[: rules.attr_bytes]
    fd = _linux.syscall(_linux.NR_LANDLOCK_CREATE_RULESET, attr, len(attr), 0)
    try:
        for path in writable_dirs:
            _add_rule(fd, path, rules.handled_fs)
        for path in writable_files:
            _add_rule(fd, path, rules.file_rights)
    except OSError:
        os.close(fd)
        raise
    return fd


def restrict_self(ruleset_fd: int) -> None:
    """Confine the calling thread (and its future children) by a ruleset; needs no_new_privs."""
    _linux.syscall(_linux.NR_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0)


def _add_rule(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = struct.pack("=Qi", rights, fd)
        _linux.syscall(_linux.NR_LANDLOCK_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0)
    finally:
        os.close(fd)
