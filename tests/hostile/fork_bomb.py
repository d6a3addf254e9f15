# expect: runtime_error timeout
# limits: {"wall_s": 3}
import os
while True:
    os.fork()
