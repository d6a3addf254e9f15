# A word where the C++ checker calls std::stoll: the exception it throws aborts the checker.
# env: codecontests
# problem: checker_crash_stoll
# expect: wrong_answer
print("three")
