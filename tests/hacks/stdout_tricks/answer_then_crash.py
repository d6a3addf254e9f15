# env: codecontests
# problem: add
# expect: runtime_error
# note: prints the right answer, then fails: a judge counts the crash
a, b = map(int, input().split())
print(a + b, flush=True)
raise RuntimeError("after the answer")
