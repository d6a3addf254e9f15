"""Thin ctypes wrappers over the Linux calls the sandbox needs and Python 3.11 lacks.

Stdlib only: this module runs inside the fork server, a `python -I -S` process.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080
NAMESPACE_FLAGS = (
    CLONE_NEWNS
    | CLONE_NEWCGROUP
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWNET
    | CLONE_NEWTIME
)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECUREBITS = 28
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

MACHINE = platform.machine()
# Syscall numbers that differ by architecture (the generic table is aarch64's).
_NR = {
    "x86_64": {"pivot_root": 155, "seccomp": 317, "capget": 125, "capset": 126},
    "aarch64": {"pivot_root": 41, "seccomp": 277, "capget": 90, "capset": 91},
}
# Landlock's numbers are the same on every architecture.
NR_LANDLOCK_CREATE_RULESET = 444
NR_LANDLOCK_ADD_RULE = 445
NR_LANDLOCK_RESTRICT_SELF = 446
# The mount API's calls, numbered alike on every architecture too.
NR_OPEN_TREE = 428
NR_MOVE_MOUNT = 429
OPEN_TREE_CLONE = 1
AT_FDCWD = -100
MOVE_MOUNT_F_EMPTY_PATH = 4


def _check(result: int) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def syscall(name_or_nr: str | int, *args: int | bytes | ctypes.Array | None) -> int:
    """Raw syscall by architecture-specific name or number; OSError on failure."""
    nr = _NR[MACHINE][name_or_nr] if isinstance(name_or_nr, str) else name_or_nr
    # Variadic: ints must be widened to long by hand or ctypes passes them as C int.
    widened = [ctypes.c_long(arg) if isinstance(arg, int) else arg for arg in args]
    return _check(_libc.syscall(ctypes.c_long(nr), *widened))


def clone_tree(path: str) -> int:
    """A detached copy of the mount at `path` (open_tree's OPEN_TREE_CLONE), as a descriptor that
    another mount namespace may attach (`attach_tree`); needs CAP_SYS_ADMIN."""
    return syscall(NR_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | os.O_CLOEXEC)


def attach_tree(tree_fd: int, target: str) -> None:
    """Attach a detached tree (`clone_tree`'s) at `target` in this mount namespace."""
    syscall(NR_MOVE_MOUNT, tree_fd, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH)


def unshare(flags: int) -> None:
    """unshare(2)."""
    _check(_libc.unshare(flags))


def setns(fd: int, nstype: int) -> None:
    """setns(2)."""
    _check(_libc.setns(fd, nstype))


def mount(source: str, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    """mount(2)."""
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        )
    )


def umount2(target: str, flags: int = 0) -> None:
    """umount2(2)."""
    _check(_libc.umount2(target.encode(), flags))


def pivot_root(new_root: str, put_old: str) -> None:
    """pivot_root(2)."""
    syscall("pivot_root", new_root.encode(), put_old.encode())


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    """prctl(2)."""
    return _check(
        _libc.prctl(
            option, ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), ctypes.c_ulong(arg4), ctypes.c_ulong(arg5)
        )
    )


def drop_capabilities() -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable capability sets."""
    for cap in range(64):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError:
            break  # past the last capability this kernel knows
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = struct.pack("II", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = bytes(24)  # two zeroed {effective, permitted, inheritable} triples
    syscall("capset", header, data)


CAP_SETPCAP = 8
CAP_SYS_ADMIN = 21
PR_CAP_AMBIENT_RAISE = 2


def keep_across_exec(caps: tuple[int, ...]) -> None:
    """Let the programs this process executes keep `caps` (of its permitted set): they are added
    to its inheritable and ambient sets, which a non-root execve keeps, where it drops the rest."""
    header = struct.pack("II", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = ctypes.create_string_buffer(24)
    syscall("capget", header, data)
    words = list(struct.unpack("6I", data.raw))  # {effective, permitted, inheritable} x 2
    for cap in caps:
        words[2 + 3 * (cap // 32)] |= 1 << (cap % 32)
    syscall("capset", header, struct.pack("6I", *words))
    for cap in caps:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap)


def set_pdeathsig(signum: int) -> None:
    """Have the kernel send `signum` to this process when its parent dies."""
    prctl(PR_SET_PDEATHSIG, signum)


def set_no_new_privs() -> None:
    """Forbid gaining privileges through execve (setuid binaries, file capabilities)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
