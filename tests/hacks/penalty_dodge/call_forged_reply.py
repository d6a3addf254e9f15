# env: call
# func: f
# expect: runtime_error ok
# note: writes garbage frames on its reply channel before its real reply: its data, never the farm's fault
import os, struct
for body in (b"[" * 20000, b'["return"', b"\xff\xfe"):
    for fd in range(3, 16):
        try:
            os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            pass
def f():
    return 1
