# env: humaneval
# problem: bridge_all_map
# expect: ok
# note: an honest correct completion of an all(map(...)) test
    if x < 0:
        raise ValueError('negative')
    return 2 * x
