# env: codecontests
# problem: count
# expect: wrong_answer
# note: under a relative tolerance of 1e-6, 1000000001 is "close" to 1000000000; an answer written
# as an integer is compared exactly
print(int(input()) + 1)
