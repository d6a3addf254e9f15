"""The program a slot runs once at start-up, through the ordinary run path, to check its walls.

Each check is a fact only a working layer makes true; the server refuses to serve (fail closed)
when a layer it reports on is not actually in force.
"""

import json

PROBE = r"""
import ctypes, errno, json, os, socket
checks = {}
checks["namespaces"] = os.getpid() == 1 and [p for p in os.listdir("/proc") if p.isdigit()] == ["1"]
try:
    socket.create_connection(("127.0.0.1", 9), timeout=0.5)
    checks["network"] = False
except OSError:
    checks["network"] = True
try:
    open("/usr/.evalfarm-probe", "w")
    checks["filesystem"] = False
except OSError:
    checks["filesystem"] = not os.path.exists("/root/.bash_history") and os.path.isdir("/tmp")
checks["user"] = os.getuid() != 0
libc = ctypes.CDLL(None, use_errno=True)
checks["seccomp"] = libc.unshare(0x10000000) != 0 and ctypes.get_errno() == errno.EPERM
try:
    socket.socket().bind(("0.0.0.0", 0))
    checks["landlock"] = False
except OSError as error:
    checks["landlock"] = error.errno == errno.EACCES
print(json.dumps(checks))
"""


def failed_layers(layers: dict[str, str], stdout: bytes) -> list[str]:
    """The layers reported on whose check did not hold (all of them when the probe gave nothing)."""
    try:
        checks = json.loads(stdout)
    except ValueError:
        return ["probe"]
    return [name for name, held in checks.items() if layers.get(name, "on").startswith("on") and not held]
