# env: codecontests
# problem: preamble_add
# expect: wrong_answer
# note: defines add itself, wrongly
def add(a, b):
    return a - b
