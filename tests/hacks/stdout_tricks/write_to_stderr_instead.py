# env: codecontests
# problem: add
# expect: wrong_answer
import sys
a, b = map(int, input().split())
print(a + b, file=sys.stderr)
