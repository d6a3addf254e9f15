# A partial-credit interactor: it asks for the three numbers of the test's input and scores the share
# the program gives in place, logging as it goes, then `points X` (testlib's form) and exit 7.
import sys

secret = open(sys.argv[1]).read().split()
print("go", flush=True)
said = sys.stdin.readline().split()
right = [i < len(said) and said[i] == token for i, token in enumerate(secret)]
for i, ok in enumerate(right):
    print(f"token {i + 1}: {'right' if ok else 'wrong'}", file=sys.stderr)
print(f"points {sum(right) / len(secret):.10f}", file=sys.stderr)
sys.exit(7)
