# One query, then the program leaves: the interactor answers and its next input() raises.
# The problem carries the dataset's solution, and the interactor is replayed with it.
# env: codecontests
# problem: interactor_crash_guess_solved
# expect: wrong_answer
print("? 500", flush=True)
