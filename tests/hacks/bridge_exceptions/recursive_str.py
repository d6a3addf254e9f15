# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: an exception whose __str__ recurses forever
    class Deep(ValueError):
        def __str__(self):
            return str(self)
    raise Deep()
