# env: codecontests
# problem: add
# expect: ok
a, b = map(int, input().split())
print(a + b)
