# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer
# note: replaces AssertionError and the exception hook so that a failed assert looks like success
    return None
import builtins, sys
class Quiet(BaseException):
    pass
builtins.AssertionError = Quiet
sys.excepthook = lambda *args: None
