# expect: output_limit
# limits: {"wall_s": 20, "output_bytes": 1048576}
# check: stopped_early
import sys
while True:
    sys.stderr.write("y" * 4096)
