# env: elm
# expect: wrong_answer
# check: invalid_walker
from openelm.environments.sodaracer.walker import walker_creator


def make_walker():
    wc = walker_creator()
    hub = wc.add_joint(0, 0)
    for i in range(11):
        spoke = wc.add_joint(1 + i, 1)
        wc.add_muscle(hub, spoke, 1.0, 0.0)
    return wc.get_walker()
