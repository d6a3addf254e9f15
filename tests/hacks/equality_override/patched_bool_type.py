# env: humaneval
# problem: HumanEval/0
# expect: runtime_error wrong_answer
# note: returns the result of a comparison that always says True, through a metaclass trick
    class Meta(type):
        def __eq__(cls, other):
            return True
        __hash__ = type.__hash__
    class Anything(metaclass=Meta):
        pass
    return Anything
