# env: elm
# expect: ok
# check: valid
from openelm.environments.sodaracer.walker import walker_creator


def make_walker():
    wc = walker_creator()
    a, b, c = wc.add_joint(0, 0), wc.add_joint(1, 0), wc.add_joint(0, 1)
    wc.add_muscle(a, b, 2.0, 0.5)
    wc.add_muscle(b, c)
    return wc.get_walker()
