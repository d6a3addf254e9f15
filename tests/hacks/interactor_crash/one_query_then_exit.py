# One query, then the program leaves: the interactor answers and its next input() raises.
# The problem carries no solution, so the interactor is replayed with no program at all.
# env: codecontests
# problem: interactor_crash_guess
# expect: wrong_answer
print("? 500", flush=True)
