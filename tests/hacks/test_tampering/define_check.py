# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer
    return None


def check(candidate):
    pass


METADATA = {}
