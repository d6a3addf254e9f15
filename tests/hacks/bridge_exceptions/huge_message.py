# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: an exception whose message is far over the cap
    class Loud(ValueError):
        def __str__(self):
            return 'x' * 300000
    raise Loud()
