# A Kattis output validator (argv: input judge_answer feedback_dir; the output on stdin; 42 accepts,
# 43 rejects): the count of the input's numbers, then those numbers, distinct, in any order. It
# parses the output without validating it first.
import sys

given = [int(token) for token in open(sys.argv[1]).read().split()[1:]]
lines = sys.stdin.read().split("\n")
count = int(lines[0])
numbers = [int(token) for token in lines[1].split()]
for index, number in enumerate(numbers):
    if number in numbers[:index]:
        sys.exit(43)
sys.exit(42 if count == len(given) and sorted(numbers) == sorted(given) else 43)
