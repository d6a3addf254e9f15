# env: humaneval
# problem: bridge_catches_anything
# expect: runtime_error
# note: GeneratorExit is not an Exception: the test's except Exception must not swallow it
    raise GeneratorExit
