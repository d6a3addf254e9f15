# env: codecontests
# problem: preamble_add
# expect: ok
# note: defines add itself: its own function answers
def add(a, b):
    return a + b
