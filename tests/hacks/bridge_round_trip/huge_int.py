# env: humaneval
# problem: bridge_round_trip
# expect: runtime_error wrong_answer
# note: returns an int past the digit limit (it crosses and goes back; it is just wrong)
    return 10**5000
