# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
    raise AssertionError([10**5000], "x" * 10**6)
