# expect: output_limit
# limits: {"wall_s": 20, "output_bytes": 1048576}
# check: stopped_early
import sys
line = "x" * 1000 + "\n"
while True:
    sys.stdout.write(line)
