# env: codecontests
# problem: secret_checker
# expect: ok
print("EVALFARM-SECRET-" + SECRET_HEX)
