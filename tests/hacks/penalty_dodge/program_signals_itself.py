# env: program
# expect: runtime_error ok timeout
# note: SIGKILL to itself, its group and everyone: PID 1 of its namespace cannot be killed from inside
import os, signal
for target in (os.getpid(), 0, -1, 1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
os.killpg(0, signal.SIGKILL) if hasattr(os, "killpg") else None
