# env: codecontests
# problem: file_io_add
# expect: ok
with open("input.txt") as given:
    a, b = map(int, given.read().split())
with open("output.txt", "w") as answer:
    print(a + b, file=answer)
