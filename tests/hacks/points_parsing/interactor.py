# One number in place of three: a third of the points. The interactor logs each token's number
# ("token 1: right"), which a points parser reading the first number anywhere took for a full score.
# env: codecontests
# problem: points_parsing_interactor
# expect: wrong_answer
input()
print(1, 5, 6, flush=True)
