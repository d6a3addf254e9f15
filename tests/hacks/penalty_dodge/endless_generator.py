# env: humaneval
# problem: HumanEval/0
# expect: runtime_error timeout memory_limit
    import itertools
    return itertools.count()
