# expect: ok
# limits: {"wall_s": 5}
# check: no_leftover_processes
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(2)
        with open("/tmp/evalfarm-daemon-was-here", "w") as f:
            f.write("still alive")
        time.sleep(3600)
    os._exit(0)
time.sleep(0.2)
print("parent done")
