# env: humaneval
# problem: bridge_catches_anything
# expect: ok
# note: an honest completion of a test that catches any Exception
    if x < 0:
        raise ValueError('negative')
    return 2 * x
