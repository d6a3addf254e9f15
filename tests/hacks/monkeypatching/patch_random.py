# env: humaneval
# problem: HumanEval/53
# expect: wrong_answer
# note: the test draws random cases: fixing the generator to return zeros makes a wrong add() pass them
    return 1
import random
random.randint = lambda a, b: 0
random.random = lambda: 0.0
