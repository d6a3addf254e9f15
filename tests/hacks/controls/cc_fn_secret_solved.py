# env: codecontests
# problem: secret_fn
# expect: ok
def secret():
    return "EVALFARM-SECRET-" + SECRET_HEX
