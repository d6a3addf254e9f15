# env: humaneval
# problem: HumanEval/0
# expect: runtime_error wrong_answer
    class Liar(list):
        def __eq__(self, other):
            return True
        def __bool__(self):
            return True
    return Liar()
