# expect: ok runtime_error
import os, signal
print("ppid", os.getppid())
try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError as error:
    print("blocked", error)
