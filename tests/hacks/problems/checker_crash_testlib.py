# A dataset-style checker under testlib's protocol (argv: input output answer): the output is the
# count of the input's numbers, then those numbers, distinct, in any order. Like most dataset
# checkers it parses the output without validating it first.
import sys

given = [int(token) for token in open(sys.argv[1]).read().split()[1:]]
lines = open(sys.argv[2]).read().split("\n")
count = int(lines[0])
numbers = [int(token) for token in lines[1].split()]
for index, number in enumerate(numbers):  # distinct (a quadratic check, as written in a hurry)
    if number in numbers[:index]:
        sys.exit(1)
sys.exit(0 if count == len(given) and sorted(numbers) == sorted(given) else 1)
