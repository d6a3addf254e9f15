# env: codecontests
# problem: preamble_gcd
# expect: ok
# note: a Solution method named gcd that calls the preamble's gcd (a method may use the preamble's names)
class Solution:
    def gcd(self, a, b):
        return gcd(a, b)
