# expect: ok
# check: only_own_processes
import os
print("PIDS", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
