# A partial-credit checker under testlib's protocol: the share of the answer's tokens the output has
# in place, as testlib's quitp writes it (`points X` on stderr, exit 7), after a diagnostic of its own.
import sys

output = open(sys.argv[2]).read().split()
answer = open(sys.argv[3]).read().split()
right = [i < len(output) and output[i] == token for i, token in enumerate(answer)]
if not all(right):
    print(f"first mismatch at token {right.index(False)}", file=sys.stderr)
print(f"points {sum(right) / len(answer):.10f}", file=sys.stderr)
sys.exit(7)
