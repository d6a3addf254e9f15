# env: codecontests
# problem: real
# expect: wrong_answer
# note: the right answer, then every other answer too: extra tokens are a wrong answer
print("2.500000", *[f"{x / 10:.6f}" for x in range(100)])
