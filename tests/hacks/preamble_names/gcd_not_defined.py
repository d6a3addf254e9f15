# env: codecontests
# problem: preamble_gcd
# expect: runtime_error
# note: defines no gcd: the preamble's star imports did, and answered for it
pass
