# env: call
# func: f
# expect: runtime_error
# note: an int too long to write as JSON: the result must still be written (Celery, the CLI, HTTP)
def f():
    return 10**5000
