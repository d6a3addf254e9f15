# env: humaneval
# problem: HumanEval/0
# expect: runtime_error
    import os
    os._exit(0)
