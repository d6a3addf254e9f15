# expect: output_limit
# limits: {"wall_s": 20}
# check: stopped_early
import subprocess
subprocess.run(["/bin/sh", "-c", "while :; do echo yyyyyyyyyyyyyyyyyyyyyyyy; done"])
