# env: codecontests
# problem: add
# expect: wrong_answer
# note: prints many candidate answers hoping a lenient comparison accepts one of them
a, b = map(int, input().split())
for guess in range(a + b - 3, a + b + 4):
    print(guess)
