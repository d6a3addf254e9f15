# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
# note: an int subclass whose __bool__ and __eq__ lie; the test's `== True` sees the plain 0
    class Liar(int):
        def __eq__(self, other):
            return True
        def __bool__(self):
            return True
        __hash__ = int.__hash__
    return Liar(0)
