# A word where the checker expects a number: its int() raises, and the checker exits as it does on a
# crash. Such output is a wrong answer, not the judge's fault.
# env: codecontests
# problem: checker_crash_openr1
# expect: wrong_answer
print("three numbers")
