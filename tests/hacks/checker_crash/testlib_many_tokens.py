# 200,000 numbers for a checker whose distinctness check is quadratic: it runs out of its time.
# env: codecontests
# problem: checker_crash_testlib
# expect: wrong_answer
print(200000)
print(*range(1, 200001))
