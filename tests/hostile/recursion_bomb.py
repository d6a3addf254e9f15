# expect: runtime_error
def f():
    return f()
f()
