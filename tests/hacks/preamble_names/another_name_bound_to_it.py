# env: codecontests
# problem: preamble_gcd
# expect: runtime_error
# note: binds the preamble's function to another name, not to the one the tests call
answer = globals().get('gcd')
