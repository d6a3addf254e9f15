# expect: ok
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT = 0, 0o1000
shmid = libc.shmget(0x5EC2E7, 1 << 20, IPC_CREAT | 0o666)
print("segment", shmid)
