# A partial-credit checker that prints its score alone on stdout (exit 7) and a diagnostic on stderr.
import sys

output = open(sys.argv[2]).read().split()
answer = open(sys.argv[3]).read().split()
right = [i < len(output) and output[i] == token for i, token in enumerate(answer)]
if not all(right):
    print(f"first mismatch at token {right.index(False)}", file=sys.stderr)
print(sum(right) / len(answer))
sys.exit(7)
