# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: StopAsyncIteration ends an async iteration as StopIteration ends map
    raise StopAsyncIteration
