# The count, then the input's numbers in another order: accepted.
# env: codecontests
# problem: checker_crash_index
# expect: ok
count = input()
print(count)
print(*reversed(input().split()))
