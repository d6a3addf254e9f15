# expect: output_limit
# limits: {"wall_s": 20}
# check: stopped_early
import os
block = bytes(range(256)) * 256
while True:
    os.write(1, block)
