# No output at all: the checker's int() of the first line raises.
# env: codecontests
# problem: checker_crash_openr1
# expect: wrong_answer
