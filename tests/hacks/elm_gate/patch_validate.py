# env: elm
# expect: wrong_answer
# check: invalid_walker
# note: patches the library's validate() before the harness runs
from openelm.environments.sodaracer import walker as library
library.Walker.validate = lambda self: True


def make_walker():
    wc = library.walker_creator()
    a = wc.add_joint(0, 0)
    b = wc.add_joint(0, 0.001)  # two joints closer than the rule allows
    wc.add_muscle(a, b)
    return wc.get_walker()
