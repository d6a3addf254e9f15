# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: a StopIteration carrying True, in case a value of its ever counts
    raise StopIteration(True)
