# env: humaneval
# problem: bridge_expects_error
# expect: runtime_error
# note: an honest completion raising another exception than the test expects
    if x < 0:
        raise KeyError('negative')
    return 2 * x
