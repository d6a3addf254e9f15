# env: humaneval
# problem: bridge_round_trip
# expect: wrong_answer
# note: an honest wrong round trip (shifts by one place too many)
    return ''.join(chr((ord(c) - 96 + k) % 26 + 97) for c in s)
