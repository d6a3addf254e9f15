# env: codecontests
# problem: add
# expect: timeout
# note: four processes each stay under the CPU limit (a per-process rlimit), together far over it;
# the slot's cgroup counts them all
import os, time
a, b = map(int, input().split())
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + 0.9
        while time.process_time() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print(a + b)
