# env: codecontests
# problem: real
# expect: ok
# note: 2.5000004 is within 1e-6 of 2.500000: a correct answer printed with other digits
a, b = map(int, input().split())
print(f"{a / b + 4e-7:.7f}")
