# env: call
# func: f
# expect: runtime_error
# note: nested just under the decoder's limit, past what the worker's own JSON writer can nest
def f():
    value = []
    for _ in range(990):
        value = [value]
    return value
