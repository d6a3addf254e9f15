# The count, then one number repeated: a clean wrong answer from a healthy checker.
# env: codecontests
# problem: checker_crash_testlib
# expect: wrong_answer
count = int(input())
print(count)
print(*[1] * count)
