# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a numpy array of dtype timedelta64[s], whose items are not plain values
    import numpy
    return numpy.array([1, 2], dtype='timedelta64[s]')
