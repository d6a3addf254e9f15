# env: codecontests
# problem: real
# expect: wrong_answer
# note: Python's float() reads 2.500_000 as 2.5; testlib does not
print("2.500_000")
