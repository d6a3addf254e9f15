# Every number in place: full points.
# env: codecontests
# problem: points_parsing_stderr
# expect: ok
input()
print(1, 2, 3, flush=True)
