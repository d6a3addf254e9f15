# env: humaneval
# problem: bridge_round_trip
# expect: ok
# note: an honest round trip: each value comes back and goes out again
    return ''.join(chr((ord(c) - 97 + k) % 26 + 97) for c in s)
