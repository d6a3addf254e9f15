# env: humaneval
# problem: HumanEval/2
# expect: wrong_answer
# note: a float whose arithmetic and comparisons always land within the test's tolerance
    class Liar(float):
        def __sub__(self, other):
            return 0.0
        def __eq__(self, other):
            return True
        def __abs__(self):
            return 0.0
        __hash__ = float.__hash__
    return Liar(99.0)
