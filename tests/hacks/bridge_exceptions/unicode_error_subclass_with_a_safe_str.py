# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: a real UnicodeDecodeError subclass whose own str() is safe but whose positions are not
    class Bad(UnicodeDecodeError):
        def __str__(self):
            return 'bad'
    raise Bad('utf-8', b'x', -10**9, -10**9 + 1, 'bad')
