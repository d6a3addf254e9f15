# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a numpy array of dtype object, whose items are not plain values
    import numpy
    return numpy.array([s, None], dtype='object')
