# An empty program: the interactor's input() meets the end of the program's output and raises.
# The problem carries no solution, so the interactor is replayed with no program at all.
# env: codecontests
# problem: interactor_crash_guess
# expect: wrong_answer
