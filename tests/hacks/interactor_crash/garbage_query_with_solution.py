# A query the interactor cannot parse (its int() raises), then a clean exit once it has gone.
# The problem carries the dataset's solution, and the interactor is replayed with it.
# env: codecontests
# problem: interactor_crash_guess_solved
# expect: wrong_answer
import sys

print("? many", flush=True)
sys.stdin.read()
