# env: humaneval
# problem: HumanEval/0
# expect: runtime_error
# note: an exception whose argument cannot be printed (an int past Python's digit limit), re-raised
# in the judge: reporting it must not fail the judge (that would be judge_error: no reward, masked)
    raise ValueError(10**5000)
