# env: humaneval
# problem: HumanEval/0
# expect: runtime_error
# note: a return value nested far past any decoder's recursion limit
    value = []
    for _ in range(100000):
        value = [value]
    return value
