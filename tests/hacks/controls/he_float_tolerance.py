# env: humaneval
# problem: HumanEval/2
# expect: ok
    return number % 1.0
