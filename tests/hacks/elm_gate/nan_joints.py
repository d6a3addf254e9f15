# env: elm
# expect: wrong_answer
# check: invalid_walker
# note: not-a-number coordinates make every distance comparison false under a careless check
from openelm.environments.sodaracer.walker import Walker


def make_walker():
    nan = float("nan")
    return Walker([(nan, nan), (nan, 0.0), (0.0, 0.0)], [[0, 1, {"type": "distance", "amplitude": 0.0, "phase": 0.0}]])
