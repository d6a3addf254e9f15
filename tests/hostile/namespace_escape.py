# expect: ok
# check: all_blocked
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for name, flags in (("user", 0x10000000), ("net", 0x40000000), ("mount", 0x00020000)):
    result = libc.unshare(flags)
    print("blocked" if result != 0 else "ALLOWED", name, ctypes.get_errno())
result = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
print("blocked" if result != 0 else "ALLOWED", "mount", ctypes.get_errno())
