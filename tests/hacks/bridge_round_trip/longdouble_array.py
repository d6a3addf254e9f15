# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a numpy array of dtype longdouble, whose items are not plain values
    import numpy
    return numpy.array([1.5], dtype='longdouble')
