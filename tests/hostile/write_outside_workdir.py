# expect: ok
# check: no_host_writes
import os
targets = ["/evalfarm-escape", "/etc/evalfarm-escape", "/usr/evalfarm-escape", "/root/evalfarm-escape",
           "/dev/evalfarm-escape", "/proc/evalfarm-escape"]
for path in targets:
    try:
        with open(path, "w") as f:
            f.write("escaped")
        print("WROTE", path)
    except OSError as error:
        print("blocked", path, type(error).__name__)
with open("/tmp/inside", "w") as f:
    f.write("fine")
print("inside ok")
