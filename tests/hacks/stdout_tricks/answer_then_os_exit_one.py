# env: codecontests
# problem: add
# expect: runtime_error
import os
a, b = map(int, input().split())
os.write(1, f"{a + b}\n".encode())
os._exit(1)
