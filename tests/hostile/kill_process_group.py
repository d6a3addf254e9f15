# expect: ok runtime_error
import os, signal
os.killpg(0, signal.SIGKILL)
