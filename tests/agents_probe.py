"""A bash session on a fresh sandbox slot, from a workspace, its answers printed as JSON: for running as
another user (`tests/unprivileged.py`), where a session has no cgroups, the slot is a user namespace and
the workspace is copied into the session (no mount can be cloned without privilege)."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import tempfile

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

from evalfarm import archive  # noqa: E402
from evalfarm.sandbox import Limits, Sandbox  # noqa: E402
from evalfarm.sandbox.session_interpreter import Interpreter  # noqa: E402
from evalfarm.workers.workspaces import own_tree  # noqa: E402

COMMANDS = [
    ("cd sub && echo $PWD && export X=1", None),
    ("cat data.txt; echo $X; echo mine > data.txt", None),
    ("sleep 60", 0.5),
    ("echo $X $(pwd); id -u", None),
]


def main() -> None:
    tree = tempfile.mkdtemp()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as out:
        for name, content in (("sub/data.txt", b"shared\n"),):
            info = tarfile.TarInfo(name)
            info.size = len(content)
            out.addfile(info, io.BytesIO(content))
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    archive.unpack(buffer.getvalue(), fd)
    os.close(fd)
    with Sandbox(slot=int(sys.argv[1]) if len(sys.argv) > 1 else 94) as sandbox:
        own_tree(tree, sandbox.uid)  # as a node's session host makes its workspaces the sessions'
        sessions = [Interpreter.start(sandbox, Limits(memory_mb=256, wall_s=5), kind="bash", workspace=tree)]
        sessions.append(
            Interpreter.start(sandbox, Limits(memory_mb=256, wall_s=5), kind="bash", workspace=tree)
        )
        try:
            for session in sessions:
                session.open_shell("default", vital=True)
            for command, timeout_s in COMMANDS:
                result = sessions[0].run(command.encode(), b"", timeout_s)
                print(json.dumps({"command": command, **result.to_dict()}))
            other = sessions[1].run(b"cat sub/data.txt")
            print(json.dumps({"command": "other", **other.to_dict()}))
        finally:
            for session in sessions:
                session.close()
    with open(os.path.join(tree, "sub", "data.txt")) as handle:
        print(json.dumps({"command": "host", "stdout": handle.read()}))


if __name__ == "__main__":
    main()
