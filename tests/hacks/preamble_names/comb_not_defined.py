# env: codecontests
# problem: preamble_comb
# expect: runtime_error
# note: defines no comb: the preamble's star imports did, and answered for it
pass
