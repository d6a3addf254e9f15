# env: elm
# expect: wrong_answer
# check: not_walker
# note: writes the harness's reply itself (well formed, with the farm's own encoder), claiming the
# check "valid", and leaves before the harness runs
import os, struct, sys


def make_walker():
    encode = sys.modules["evalfarm.sandbox.values"].encode
    body = encode(["return", {"check": "valid", "result_obj": {"joints": [], "muscles": []}}])
    for fd in range(3, 16):
        try:
            os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            pass
    os._exit(0)
