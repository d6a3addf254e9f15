"""A node's workspaces: archives uploaded once to the farm (`broker.session_client.upload_workspace`),
fetched by a node's session host the first time a session asks for one, unpacked once
(`evalfarm.archive`, refusing what could leave the tree) and shared by every session on the node that
starts from it: each session sees it at /workspace, read-only below its own writes (an overlay; see
`sandbox._child`).

A tree is owned by the sessions' uid (they share the node's session slot), so a session may change
its own copy of any file. Trees no session uses are kept for the next group, the least recently used
removed past `keep`; the host removes its folder when it stops.
"""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
import threading
from typing import Any

from evalfarm import archive
from evalfarm.broker import keys


class WorkspaceMissing(LookupError):
    """No workspace of that id is kept by the farm (never uploaded, or expired)."""


class Workspaces:
    """The workspaces unpacked on this node, by id, and how many sessions use each."""

    def __init__(self, redis: Any, caps: archive.Caps, keep: int = 16, root: str | None = None) -> None:
        self.redis = redis
        self.caps = caps
        self.keep = keep
        self.root = root or tempfile.mkdtemp(prefix="evalfarm-workspaces-")
        os.chmod(self.root, 0o755)  # the sessions' uid reaches its trees (their files are its own)
        self.users: collections.Counter[str] = collections.Counter()
        self.used: collections.OrderedDict[str, str] = collections.OrderedDict()  # id -> path, by use
        self.lock = threading.Lock()

    def acquire(self, identity: str, uid: int | None) -> str:
        """The unpacked tree of workspace `identity` (fetched and unpacked the first time), counted
        as used until `release`; WorkspaceMissing, or ArchiveRefused for an archive it cannot take."""
        with self.lock:
            path = self.used.get(identity)
            if path is None:
                path = self._unpack(identity, uid)
                self.used[identity] = path
            self.used.move_to_end(identity)
            self.users[identity] += 1
            self._evict()
        return path

    def release(self, identity: str) -> None:
        """One session no longer uses workspace `identity`."""
        with self.lock:
            self.users[identity] -= 1
            if self.users[identity] <= 0:
                del self.users[identity]
            self._evict()

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _unpack(self, identity: str, uid: int | None) -> str:
        data = self.redis.get(keys.workspace_key(identity))
        if data is None:
            raise WorkspaceMissing(f"no workspace {identity} (never uploaded, or expired)")
        path = os.path.join(self.root, identity)
        staging = tempfile.mkdtemp(prefix=f"{identity}.", dir=self.root)
        try:
            directory = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                archive.unpack(bytes(data), directory, self.caps)
            finally:
                os.close(directory)
            own_tree(staging, uid)
            os.rename(staging, path)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return path

    def _evict(self) -> None:
        """Remove the least recently used trees no session uses, past `keep`."""
        idle = [identity for identity in self.used if not self.users[identity]]
        for identity in idle[: max(0, len(self.used) - self.keep)]:
            shutil.rmtree(self.used.pop(identity), ignore_errors=True)


def own_tree(path: str, uid: int | None) -> None:
    """Make the tree the sessions' (their uid; as root only) and readable by them."""
    os.chmod(path, 0o755)
    if uid is None or os.geteuid() != 0:
        return
    for directory, names, files in os.walk(path):
        os.chown(directory, uid, uid)
        for name in names + files:
            os.chown(os.path.join(directory, name), uid, uid, follow_symlinks=False)
