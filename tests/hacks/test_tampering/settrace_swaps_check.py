# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
# note: a tracer that replaces `check` with a no-op as soon as it is defined
    return None
import sys
def tracer(frame, event, arg):
    if "check" in frame.f_globals:
        frame.f_globals["check"] = lambda candidate: None
    return tracer
sys.settrace(tracer)
sys.setprofile(lambda *a: None)
