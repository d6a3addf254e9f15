# env: codecontests
# problem: add
# expect: wrong_answer
a, b = map(int, input().split())
print(a - b)
