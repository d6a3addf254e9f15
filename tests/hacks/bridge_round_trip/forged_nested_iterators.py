# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error
# note: a hand-written iterator within an iterator, 150 deep
    import os, struct, time
    body = b'["return", ' + b'{"#": "iter", "v": [' * 150 + b']}' * 150 + b']'
    os.write(6, struct.pack('>I', len(body)) + body)
    while True:
        time.sleep(1)
