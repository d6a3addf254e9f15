# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
# note: replaces __builtins__ of its module and every loaded module with a dict whose `len`, `abs`,
# `isinstance` and `AssertionError` lie
    return None
import builtins, sys
fake = dict(vars(builtins), len=lambda x: 0, abs=lambda x: 0, isinstance=lambda *a: True)
for module in list(sys.modules.values()):
    try:
        module.__dict__["__builtins__"] = fake
    except Exception:
        pass
