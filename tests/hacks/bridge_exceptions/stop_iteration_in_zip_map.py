# env: humaneval
# problem: bridge_zip_map
# expect: runtime_error
# note: raised in the test as StopIteration, it ended zip(map(...)) before the first assert
    raise StopIteration
