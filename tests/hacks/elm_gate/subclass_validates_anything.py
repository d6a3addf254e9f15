# env: elm
# expect: wrong_answer
# check: invalid_walker
# note: a Walker whose validate() accepts a muscle fifty times too strong
from openelm.environments.sodaracer.walker import Walker


class Lenient(Walker):
    def validate(self):
        return True


def make_walker():
    return Lenient([(0.0, 0.0), (0.22, 0.0)], [[0, 1, {"type": "muscle", "amplitude": 500.0, "phase": 0.0}]])
