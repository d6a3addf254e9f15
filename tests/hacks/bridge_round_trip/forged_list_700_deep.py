# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error
# note: a hand-written reply of a list 700 deep: the judge decoded it and could not encode it again to pass it back (judge_error)
    import os, struct, time
    body = b'["return", ' + b'[' * 700 + b']' * 700 + b']'
    os.write(6, struct.pack('>I', len(body)) + body)
    while True:
        time.sleep(1)
