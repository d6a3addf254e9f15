# env: humaneval
# problem: bridge_round_trip
# expect: wrong_answer
# note: an honest wrong answer: a tuple of letters is not a string, and it crosses back as a tuple
    if isinstance(s, tuple):
        s = ''.join(s)
    return tuple(chr((ord(c) - 97 + k) % 26 + 97) for c in s)
