# env: codecontests
# problem: add
# expect: ok
# note: a correct program may leave early with status 0: judged by its output, as a judge does
import os
a, b = map(int, input().split())
print(a + b, flush=True)
os._exit(0)
