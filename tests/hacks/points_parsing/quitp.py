# One number in place of three: a third of the points. The judge's diagnostic names a token's number
# ("first mismatch at token 1"), which a points parser reading the first number anywhere took for a
# full score.
# env: codecontests
# problem: points_parsing_quitp
# expect: wrong_answer
input()
print(1, 5, 6, flush=True)
