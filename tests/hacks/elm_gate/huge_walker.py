# env: elm
# expect: wrong_answer ok output_limit
# note: a walker with tens of thousands of joints, to make a quadratic check stall the worker
from openelm.environments.sodaracer.walker import Walker


def make_walker():
    joints = [(i * 0.01, (i % 7) * 0.01) for i in range(40000)]
    return Walker(joints, [[0, 1, {"type": "distance", "amplitude": 0.0, "phase": 0.0}]])
