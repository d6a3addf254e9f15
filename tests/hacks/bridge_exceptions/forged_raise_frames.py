# env: humaneval
# problem: bridge_all_map
# expect: runtime_error
# note: hand-written raise replies naming builtins whose constructors read their arguments, then waits
    import os, struct, time
    for body in (b'["raise", "UnicodeDecodeError", "x", "UnicodeDecodeError"]',
                 b'["raise", "StopIteration", "", "StopIteration"]',
                 b'["raise", [1], {"#": "set", "v": []}, "ExceptionGroup"]'):
        os.write(6, struct.pack('>I', len(body)) + body)
    while True:
        time.sleep(1)
