# env: codecontests
# problem: real
# expect: wrong_answer
# note: 0x1.4p+1 is 2.5 to C's strtod; testlib's number syntax has no hexadecimal reals
print("0x1.4p+1")
