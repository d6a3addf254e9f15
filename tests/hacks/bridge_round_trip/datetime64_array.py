# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a numpy array of dtype datetime64[D], whose items are not plain values
    import numpy
    return numpy.array(['2020-01-01'], dtype='datetime64[D]')
