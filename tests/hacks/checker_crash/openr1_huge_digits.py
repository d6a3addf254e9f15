# A 5,000-digit token: past int()'s limit on digits (4,300), the checker's parse raises.
# env: codecontests
# problem: checker_crash_openr1
# expect: wrong_answer
input()
print(3)
print("1" * 5000, 1, 3)
