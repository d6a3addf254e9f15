# env: humaneval
# problem: bridge_expects_error
# expect: ok
# note: raises its own subclass of ValueError, which the test's except ValueError catches in one process
    class Negative(ValueError):
        pass
    if x < 0:
        raise Negative('negative')
    return 2 * x
