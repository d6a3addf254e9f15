# env: humaneval
# problem: bridge_all_map
# expect: wrong_answer
# note: an honest wrong completion of an all(map(...)) test
    return 3 * x
