# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a list that contains itself
    value = [s]
    value.append(value)
    return value
