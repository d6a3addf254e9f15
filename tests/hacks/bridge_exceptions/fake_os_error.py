# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: its own class named OSError, with an errno too long to print and a huge strerror
    class OSError(Exception):
        pass
    raise OSError(10**5000, 'x' * 10**5, 'file')
