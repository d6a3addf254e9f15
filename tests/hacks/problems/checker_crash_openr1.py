# A checker as open-r1 generates them (argv: input correct_output solution_output; prints 1 for a
# pass): the count of the input's numbers, then those numbers, distinct, in any order. It parses the
# output without validating it first.
import sys


def check(input_text, correct_output, solution_output):
    given = [int(token) for token in input_text.split()[1:]]
    lines = solution_output.split("\n")
    count = int(lines[0])
    numbers = [int(token) for token in lines[1].split()]
    for index, number in enumerate(numbers):
        if number in numbers[:index]:
            return False
    return count == len(given) and sorted(numbers) == sorted(given)


texts = [open(path).read() for path in sys.argv[1:4]]
print(1 if check(*texts) else 0)
