# env: codecontests
# problem: preamble_gcd
# expect: ok
# note: imports gcd itself: its own import is its answer, as LiveCodeBench's runner takes it
from math import gcd
