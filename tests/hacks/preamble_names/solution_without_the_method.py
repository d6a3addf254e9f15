# env: codecontests
# problem: preamble_gcd
# expect: runtime_error
# note: a Solution class without the method, which the preamble's gcd must not stand in for
class Solution:
    pass
