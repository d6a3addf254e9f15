# expect: ok
# check: all_blocked
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_TRACEME, PTRACE_ATTACH = 0, 16
for request, pid in ((PTRACE_TRACEME, 0), (PTRACE_ATTACH, 1)):
    result = libc.ptrace(request, pid, None, None)
    print("blocked" if result != 0 else "ALLOWED", request, ctypes.get_errno())
