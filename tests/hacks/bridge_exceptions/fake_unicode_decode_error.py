# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: its own class named UnicodeDecodeError, positions far out of range: the judge built the builtin from them and died of SIGSEGV in str() (CPython 3.11.7): judge_error
    class UnicodeDecodeError(Exception):
        pass
    raise UnicodeDecodeError('utf-8', b'x', -10**9, -10**9 + 1, 'bad')
