# An empty program: the interactor's input() meets the end of the program's output and raises.
# The problem carries the dataset's solution, and the interactor is replayed with it.
# env: codecontests
# problem: interactor_crash_guess_solved
# expect: wrong_answer
