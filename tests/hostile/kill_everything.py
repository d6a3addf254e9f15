# expect: ok
import os, signal
try:
    os.kill(-1, signal.SIGKILL)
except OSError as error:
    print("blocked", error)
print("still here")
