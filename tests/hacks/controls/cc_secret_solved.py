# env: codecontests
# problem: secret
# expect: ok
print("EVALFARM-SECRET-" + SECRET_HEX)
