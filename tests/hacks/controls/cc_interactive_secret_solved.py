# env: codecontests
# problem: secret_interactive
# expect: ok
assert input() == "go"
print("EVALFARM-SECRET-" + SECRET_HEX, flush=True)
