# A number far out of the range the C++ checker trusts: it indexes its table with it (SIGSEGV).
# env: codecontests
# problem: checker_crash_index
# expect: wrong_answer
input()
print(3)
print(4, 1, 2000000000)
