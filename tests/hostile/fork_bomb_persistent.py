# expect: timeout
# limits: {"wall_s": 2, "cpu_s": 1}
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
