"""Run a command as an unprivileged user the tests create, as cluster workers often run.

The interpreter may live under a directory other users cannot enter (pyenv under /root): the
command then runs in a private mount namespace where each such directory is covered by a tmpfs
holding only a bind of the path that leads to the interpreter. The host's files are unchanged.
"""

from __future__ import annotations

import os
import pwd
import shlex
import subprocess
import sys
from pathlib import Path

USER = "evalfarm-test"


def ensure_user() -> pwd.struct_passwd:
    """The unprivileged test user, created if missing."""
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True
        )
        return pwd.getpwnam(USER)


def _closed_ancestors(path: Path) -> list[tuple[Path, Path]]:
    """(ancestor others cannot enter, its child on the way to `path`), outermost first."""
    closed = []
    parts = path.parts
    for depth in range(1, len(parts) - 1):
        ancestor = Path(*parts[: depth + 1])
        if not os.stat(ancestor).st_mode & 0o001:
            closed.append((ancestor, Path(*parts[: depth + 2])))
    return closed


def command(argv: list[str]) -> list[str]:
    """`argv` wrapped to run as the test user with the interpreter and project reachable."""
    user = ensure_user()
    script = ["set -e"]
    targets = {Path(os.path.realpath(sys.executable)), Path(__file__).resolve()}
    pairs = dict(pair for target in sorted(targets) for pair in _closed_ancestors(target))
    for ancestor, child in pairs.items():
        # An open descriptor keeps the child reachable once its ancestor is covered.
        script += [
            f"exec 9<{shlex.quote(str(child))}",
            f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(ancestor))}",
            f"mkdir -p {shlex.quote(str(child))}",
            f"mount --no-canonicalize --bind /proc/self/fd/9 {shlex.quote(str(child))}",
            "exec 9<&-",
        ]
    script.append(
        f"exec setpriv --reuid={user.pw_uid} --regid={user.pw_gid} --clear-groups -- "
        + " ".join(shlex.quote(arg) for arg in argv)
    )
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(script)]
