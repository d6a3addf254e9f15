# env: codecontests
# problem: file_io_add
# expect: wrong_answer
# The right answer, on stdout: a file I/O problem's answer is its output file, not what it prints.
with open("input.txt") as given:
    a, b = map(int, given.read().split())
print(a + b)
