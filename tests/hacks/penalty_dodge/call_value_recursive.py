# env: call
# func: f
# expect: runtime_error
def f():
    loop = []
    loop.append(loop)
    return loop
