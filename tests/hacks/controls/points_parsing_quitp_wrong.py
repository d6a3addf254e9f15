# No number in place: no points.
# env: codecontests
# problem: points_parsing_quitp
# expect: wrong_answer
input()
print(9, 9, 9, flush=True)
