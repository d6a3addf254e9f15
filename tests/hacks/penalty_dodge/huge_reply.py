# env: humaneval
# problem: HumanEval/0
# expect: runtime_error output_limit memory_limit
# note: a return value far over the reply cap, to crash or starve the judge
    return "x" * (64 << 20)
