# env: call
# func: f
# expect: runtime_error
# note: a value JSON cannot hold, from a call job: the program's failure, not the farm's
def f():
    return {1, 2, 3}
