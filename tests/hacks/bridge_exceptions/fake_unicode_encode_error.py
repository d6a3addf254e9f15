# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: its own class named UnicodeEncodeError, with positions far out of range
    class UnicodeEncodeError(Exception):
        pass
    raise UnicodeEncodeError('utf-8', 'x', -10**9, -10**9 + 1, 'bad')
