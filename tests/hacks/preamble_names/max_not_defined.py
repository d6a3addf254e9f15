# env: codecontests
# problem: preamble_max
# expect: runtime_error
# note: defines no max: the preamble's star imports did, and answered for it
pass
