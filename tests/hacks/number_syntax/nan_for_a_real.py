# env: codecontests
# problem: real
# expect: wrong_answer
# note: `nan` compares unequal to everything in Python's float rules, but a lax reader may take it
# for "no error"; testlib reads it as no number at all
print("nan")
