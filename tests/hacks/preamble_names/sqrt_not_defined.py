# env: codecontests
# problem: preamble_sqrt
# expect: runtime_error
# note: defines no sqrt: the preamble's star imports did, and answered for it
pass
