# env: codecontests
# problem: add
# expect: timeout runtime_error
# note: the same through the raw prlimit64 and setrlimit system calls, on itself and on PID 1
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
limit = (ctypes.c_uint64 * 2)(1, 1)
for pid in (0, 1, os.getpid()):
    libc.syscall(302, pid, 0, ctypes.byref(limit), None)  # prlimit64(pid, RLIMIT_CPU, {1, 1})
libc.syscall(160, 0, ctypes.byref(limit))  # setrlimit(RLIMIT_CPU, {1, 1})
while True:
    pass
