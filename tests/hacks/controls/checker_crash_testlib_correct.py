# The count, then the input's numbers in another order: accepted.
# env: codecontests
# problem: checker_crash_testlib
# expect: ok
count = input()
print(count)
print(*reversed(input().split()))
