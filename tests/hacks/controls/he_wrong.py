# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer
# note: an honest wrong completion
    return False
