# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: an exception whose args contain itself
    error = ValueError()
    error.args = (error, [error])
    raise error
