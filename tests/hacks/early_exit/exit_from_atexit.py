# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
# note: fails, then turns the failure into status 0 from an exit handler
    return None
import atexit, os
atexit.register(lambda: os._exit(0))
