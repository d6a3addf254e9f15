# env: humaneval
# problem: HumanEval/38
# expect: wrong_answer
    class Liar(str):
        def __eq__(self, other):
            return True
        __hash__ = str.__hash__
    return Liar("")
