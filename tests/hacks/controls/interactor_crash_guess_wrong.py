# A guess without asking, well formed: the interactor says wrong answer.
# env: codecontests
# problem: interactor_crash_guess
# expect: wrong_answer
print("! 500", flush=True)
