# env: codecontests
# problem: preamble_floor
# expect: runtime_error
# note: defines no floor: the preamble's star imports did, and answered for it
pass
