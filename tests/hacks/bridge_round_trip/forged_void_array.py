# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error
# note: a hand-written array of a void dtype
    import os, struct, time
    body = b'["return", ' + b'{"#": "ndarray", "dtype": "|V8", "shape": [1], "v": [1]}' + b']'
    os.write(6, struct.pack('>I', len(body)) + body)
    while True:
        time.sleep(1)
