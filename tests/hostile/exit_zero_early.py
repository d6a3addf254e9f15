# expect: ok
# check: not_completed
import os
os._exit(0)
