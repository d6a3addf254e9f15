# expect: timeout
# limits: {"wall_s": 1}
import atexit, time
atexit.register(time.sleep, 3600)
print("main done")
