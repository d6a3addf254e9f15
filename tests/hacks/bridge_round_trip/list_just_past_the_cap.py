# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a list one level deeper than a value may nest
    value = s
    for _ in range(101):
        value = [value]
    return value
