# expect: ok
# check: all_blocked
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for name, number in (("io_uring_setup", 425), ("bpf", 321), ("perf_event_open", 298), ("keyctl", 250)):
    result = libc.syscall(number, 0, 0, 0, 0, 0)
    print("blocked" if result < 0 else "ALLOWED", name, ctypes.get_errno())
try:
    socket.socket(40, socket.SOCK_STREAM)  # AF_VSOCK
    print("ALLOWED vsock")
except OSError as error:
    print("blocked vsock", error)
