# env: codecontests
# problem: add
# expect: timeout
# note: PID 1 of a namespace ignores the kernel's SIGXCPU: it runs past the limit, then answers right
import time
a, b = map(int, input().split())
end = time.process_time() + 2.5
while time.process_time() < end:
    pass
print(a + b)
