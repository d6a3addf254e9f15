# env: codecontests
# problem: preamble_add
# expect: runtime_error
# note: defines no add: the preamble's star imports did, and answered for it
pass
