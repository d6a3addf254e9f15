# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error
# note: a hand-written array of dtype datetime64: decoded into dates the judge could not encode again
    import os, struct, time
    body = b'["return", ' + b'{"#": "ndarray", "dtype": "datetime64[D]", "shape": [1], "v": [1]}' + b']'
    os.write(6, struct.pack('>I', len(body)) + body)
    while True:
        time.sleep(1)
