# env: codecontests
# problem: add
# expect: runtime_error wrong_answer
# note: writes 20,000 nested brackets to every descriptor (once enough to crash a JSON reader) and fails
import os
for fd in range(0, 64):
    try:
        os.write(fd, b"\n" + b"[" * 20000 + b"\n")
    except OSError:
        pass
raise SystemExit(1)
