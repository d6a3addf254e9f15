# env: elm
# expect: wrong_answer
# check: invalid_walker
from openelm.environments.sodaracer.walker import walker_creator


def make_walker():
    wc = walker_creator()
    a, b = wc.add_joint(0, 0), wc.add_joint(1, 0)
    wc.add_muscle(a, b, 50.0, 0.5)  # stronger than 10
    return wc.get_walker()
