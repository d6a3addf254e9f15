# expect: timeout
# limits: {"wall_s": 1}
import time
time.sleep(3600)
