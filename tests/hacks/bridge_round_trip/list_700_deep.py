# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a list 700 deep
    value = s
    for _ in range(700):
        value = [value]
    return value
