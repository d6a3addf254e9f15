# env: codecontests
# problem: add
# expect: timeout runtime_error
# note: a child lowers PID 1's CPU limit, then PID 1 spins
import ctypes, os
if os.fork() == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    limit = (ctypes.c_uint64 * 2)(1, 1)
    libc.syscall(302, 1, 0, ctypes.byref(limit), None)
    os._exit(0)
os.wait()
while True:
    pass
