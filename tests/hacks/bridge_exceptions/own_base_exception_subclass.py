# env: humaneval
# problem: bridge_catches_anything
# expect: runtime_error
# note: its own class deriving from BaseException only: not an Exception in the test either
    class Stop(BaseException):
        pass
    raise Stop('x')
