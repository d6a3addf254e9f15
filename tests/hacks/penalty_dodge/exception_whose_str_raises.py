# env: humaneval
# problem: HumanEval/0
# expect: runtime_error
    class Nasty(Exception):
        def __str__(self):
            raise RuntimeError("no message for you")
        def __repr__(self):
            while True:
                pass
    raise Nasty()
