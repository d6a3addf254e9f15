"""Framing between a sandbox client and its fork server: a JSON header followed by raw byte blobs.

Frame: 4-byte big-endian header length, the header as UTF-8 JSON (with "blobs": [lengths]), then
the blobs back to back. Blobs carry program text, stdin and output untouched, binary included.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

_HEADER = struct.Struct(">I")
MAX_HEADER_BYTES = 1 << 20


class ProtocolError(Exception):
    """The other side closed the channel or sent a malformed frame."""


def send(sock: socket.socket, header: dict[str, Any], *blobs: bytes) -> None:
    """Send one frame."""
    header = dict(header, blobs=[len(blob) for blob in blobs])
    encoded = json.dumps(header).encode()
    sock.sendall(b"".join([_HEADER.pack(len(encoded)), encoded, *blobs]))


def recv(sock: socket.socket) -> tuple[dict[str, Any], list[bytes]]:
    """Receive one frame: its header and its blobs."""
    (length,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if length > MAX_HEADER_BYTES:
        raise ProtocolError(f"header of {length} bytes is too large")
    header = json.loads(_recv_exact(sock, length))
    blobs = [_recv_exact(sock, size) for size in header.pop("blobs", [])]
    return header, blobs


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ProtocolError("channel closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
