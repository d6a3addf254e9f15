# expect: ok
# check: no_worker_secret
import os
print(sorted(os.environ.items()))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            print(open(f"/proc/{pid}/environ", "rb").read())
        except OSError as error:
            print("denied", error)
