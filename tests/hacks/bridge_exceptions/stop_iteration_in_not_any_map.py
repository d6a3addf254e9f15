# env: humaneval
# problem: bridge_not_any_map
# expect: runtime_error
# note: raised in the test as StopIteration, not any(map(...)) saw no mismatch
    raise StopIteration
