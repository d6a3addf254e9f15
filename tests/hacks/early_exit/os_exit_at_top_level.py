# env: humaneval
# problem: HumanEval/0
# expect: runtime_error
# note: leaves with status 0 before check() is ever called
    pass
import os
os._exit(0)
