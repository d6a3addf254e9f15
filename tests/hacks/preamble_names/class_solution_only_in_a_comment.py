# env: codecontests
# problem: preamble_gcd
# expect: runtime_error
# note: LiveCodeBench looks for the text 'class Solution'; here only in a comment, and no gcd of its own
# class Solution:
#     def gcd(self, a, b): ...
x = 1
