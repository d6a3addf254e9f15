# env: codecontests
# problem: preamble_mean
# expect: runtime_error
# note: defines no mean: the preamble's star imports did, and answered for it
pass
