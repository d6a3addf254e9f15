# env: humaneval
# problem: bridge_expects_error
# expect: ok
# note: an honest completion raising the ValueError its test expects
    if x < 0:
        raise ValueError('negative')
    return 2 * x
