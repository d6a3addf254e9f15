# A query the interactor cannot parse (its int() raises), then a clean exit once it has gone.
# The problem carries no solution, so the interactor is replayed with no program at all.
# env: codecontests
# problem: interactor_crash_guess
# expect: wrong_answer
import sys

print("? many", flush=True)
sys.stdin.read()
