"""A run's bytes in memory files: how code, input and output travel without passing through the server.

Every byte of a job (its code, stdin, arguments, files, the judge's tests) goes from the worker to the
run in a memfd the worker writes and the run reads; every byte the run produces comes back in a memfd
the server fills by splicing (the kernel moves the pages). The fork server only passes descriptors
along, so its own heap, which every later run is forked from, never holds a byte of any job.

A payload is one memfd: a 4-byte big-endian header length, the header as UTF-8 JSON (with "blobs":
their lengths), then the blobs back to back. Stdlib only: the fork server and its runs import this.
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
from typing import Any

_HEADER = struct.Struct(">I")
MAX_HEADER_BYTES = 1 << 20
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class PayloadError(ValueError):
    """The bytes are not a well-formed payload."""


def pack(header: dict[str, Any], *blobs: bytes) -> bytes:
    """A payload's bytes."""
    encoded = json.dumps(dict(header, blobs=[len(blob) for blob in blobs])).encode()
    return b"".join([_HEADER.pack(len(encoded)), encoded, *blobs])


def unpack(data: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """A payload's header and blobs; PayloadError when `data` is not one."""
    if len(data) < _HEADER.size:
        raise PayloadError("a payload shorter than its header length")
    (length,) = _HEADER.unpack_from(data)
    if length > MAX_HEADER_BYTES or _HEADER.size + length > len(data):
        raise PayloadError("a payload whose header does not fit")
    try:
        header = json.loads(data[_HEADER.size : _HEADER.size + length])
        sizes = header.pop("blobs")
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise PayloadError(f"a payload with a malformed header: {error}") from None
    if type(header) is not dict or type(sizes) is not list or any(type(s) is not int or s < 0 for s in sizes):
        raise PayloadError("a payload with a malformed header")
    blobs, offset = [], _HEADER.size + length
    for size in sizes:
        blobs.append(data[offset : offset + size])
        offset += size
    if offset != len(data):
        raise PayloadError("a payload whose blobs do not add up")
    return header, blobs


def memfd(data: bytes, name: str = "evalfarm-run", seal: bool = True) -> int:
    """A memfd holding `data` (sealed against any change when `seal`); its descriptor."""
    flags = os.MFD_CLOEXEC | (os.MFD_ALLOW_SEALING if seal else 0)
    fd = os.memfd_create(name, flags)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if seal:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        os.lseek(fd, 0, os.SEEK_SET)  # a run reads its stdin from the start
    except OSError:
        os.close(fd)
        raise
    return fd


def empty_memfd(name: str) -> int:
    """A new, empty, writable memfd (for output the server splices into it)."""
    return os.memfd_create(name, os.MFD_CLOEXEC)


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """The whole content of a memfd (or its first `limit` bytes), from offset 0."""
    size = os.fstat(fd).st_size
    if limit is not None:
        size = min(size, limit)
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, min(size - offset, 1 << 30), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)
