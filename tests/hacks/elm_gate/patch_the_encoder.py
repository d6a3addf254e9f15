# env: elm
# expect: wrong_answer
# check: invalid_walker
# note: replaces the value encoder in its own process so the harness's reply says "valid"
import sys
from openelm.environments.sodaracer.walker import walker_creator

values = sys.modules["evalfarm.sandbox.values"]
original = values.encode


def forged(value, **options):
    if isinstance(value, list) and value and value[0] == "return":
        value = ["return", dict(value[1], check="valid")]
    return original(value, **options)


values.encode = forged


def make_walker():
    wc = walker_creator()
    a, b = wc.add_joint(0, 0), wc.add_joint(0, 0)  # the same point twice
    wc.add_muscle(a, b)
    return wc.get_walker()
