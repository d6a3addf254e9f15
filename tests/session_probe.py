"""A few runs in sessions on a fresh sandbox slot, printed as JSON: for running as another user
(`tests/unprivileged.py`), where sessions have no cgroups and the slot a user namespace."""

from __future__ import annotations

import json
import os
import sys

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

from evalfarm.sandbox import Limits, Sandbox  # noqa: E402
from evalfarm.sandbox.session_interpreter import Interpreter  # noqa: E402

CELLS = [
    ("x = 41", None),
    ("x + 1", None),
    ("open('/tmp/kept', 'w').write('yes')", None),
    ("while True: pass", 0.5),
    ("open('/tmp/kept').read(), x", None),
    ("import os\nos.getuid(), os.getpid()", None),
]


def main() -> None:
    with Sandbox(slot=int(sys.argv[1]) if len(sys.argv) > 1 else 95) as sandbox:
        first = Interpreter.start(sandbox, Limits(memory_mb=256, wall_s=5))
        second = Interpreter.start(sandbox, Limits(memory_mb=256, wall_s=5))
        try:
            for code, timeout_s in CELLS:
                result = first.run(code.encode(), b"", timeout_s)
                print(json.dumps({"code": code, **result.to_dict()}))
            other = second.run(b"import os\n'x' in globals(), os.path.exists('/tmp/kept')")
            print(json.dumps({"code": "other", **other.to_dict()}))
        finally:
            first.close()
            second.close()


if __name__ == "__main__":
    main()
