"""Compiled programs a fork server keeps: each binary in a sealed memfd, the least recently used
evicted past a count or a size.

A test of a native job runs its binary straight from the memfd (`execveat` on the descriptor, which
the run inherits and closes as it starts), so the tests of a job, and a program scored again,
compile once. The compile run writes the memfd (the server never reads it); seals make it immutable
once stored: no run, however hostile, can change what the next one executes.
"""

from __future__ import annotations

import collections
import fcntl
import os

_MFD_EXEC = 0x0010  # Linux 6.3+: ask for an executable memfd where vm.memfd_noexec is set
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class Binaries:
    """Key (a hash of source, compiler and flags) -> the descriptor of that program's sealed memfd."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: collections.OrderedDict[str, tuple[int, int]] = collections.OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> int | None:
        """The binary's descriptor, now the most recently used; None when not held."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: str, fd: int, size: int) -> None:
        """Keep the sealed memfd `fd` (of `size` bytes) under `key`, evicting what no longer fits."""
        self._entries[key] = (fd, size)
        self._bytes += size
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_entries or self._bytes > self.max_bytes
        ):
            _, (old_fd, old_size) = self._entries.popitem(last=False)
            os.close(old_fd)
            self._bytes -= old_size


def new_memfd() -> int:
    """An empty memfd (executable, sealable): where a compile writes its binary."""
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    try:
        return os.memfd_create("evalfarm-program", flags | _MFD_EXEC)
    except OSError:  # a kernel before 6.3 knows no MFD_EXEC: its memfds are executable anyway
        return os.memfd_create("evalfarm-program", flags)


def keep(written: int, size: int) -> int:
    """A sealed copy of the `size` bytes of the memfd `written`; its descriptor.

    The copy is the kernel's (this process never reads the binary) and its pages are this
    process's: the compile's memfd is charged to the slot's cgroup, which caps each run, and a
    cache of binaries there would eat into every later run's memory.
    """
    fd = new_memfd()
    try:
        copied = 0
        while copied < size:
            moved = os.copy_file_range(written, fd, size - copied, copied, copied)
            if moved == 0:
                raise OSError(f"the binary ended after {copied} of {size} bytes")
            copied += moved
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except OSError:
        os.close(fd)
        raise
    return fd
