# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns a dict that contains itself
    value = {'s': s}
    value['self'] = value
    return value
