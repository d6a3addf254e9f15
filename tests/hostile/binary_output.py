# expect: ok
# check: binary_exact
import sys
sys.stdout.buffer.write(bytes(range(256)) * 4)
