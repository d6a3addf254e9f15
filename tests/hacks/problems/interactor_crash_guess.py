# Guess the number, an interactor written the usual way: it trusts every query to be "? x" or "! x"
# and the program to keep talking, so a word, or the end of the program's output, raises.
import sys

secret = int(open(sys.argv[1]).read())
for asked in range(20):
    kind, number = input().split()
    guess = int(number)
    if kind == "!":
        sys.exit(0 if guess == secret else 1)
    print("<" if guess < secret else ">" if guess > secret else "=", flush=True)
sys.exit(1)
