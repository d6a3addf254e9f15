# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a numpy array of dtype i4,f8, whose items are not plain values
    import numpy
    return numpy.array([(1, 2.0)], dtype='i4,f8')
