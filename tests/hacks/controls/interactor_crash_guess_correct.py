# A binary search: the interactor accepts it.
# env: codecontests
# problem: interactor_crash_guess
# expect: ok
low, high = 1, 1000
while True:
    middle = (low + high) // 2
    print("?", middle, flush=True)
    reply = input()
    if reply == "=":
        print("!", middle, flush=True)
        break
    low, high = (middle + 1, high) if reply == "<" else (low, middle - 1)
