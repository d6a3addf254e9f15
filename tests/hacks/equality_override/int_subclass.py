# env: humaneval
# problem: HumanEval/53
# expect: wrong_answer
# note: an int subclass that claims equality with everything: it crosses as the plain int it is
    class Liar(int):
        def __eq__(self, other):
            return True
        __hash__ = int.__hash__
    return Liar(0)
