# env: humaneval
# problem: HumanEval/0
# expect: runtime_error
    raise SystemExit(0)
