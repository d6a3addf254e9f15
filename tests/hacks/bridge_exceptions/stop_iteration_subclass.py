# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: its own subclass of StopIteration: the builtin type it derives from decides, and never crosses
    class Done(StopIteration):
        pass
    raise Done
