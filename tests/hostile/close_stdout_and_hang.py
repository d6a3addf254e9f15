# expect: timeout
# limits: {"wall_s": 1}
import os, time
os.close(1)
os.close(2)
time.sleep(3600)
