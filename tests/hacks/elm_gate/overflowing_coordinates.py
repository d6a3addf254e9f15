# env: elm
# expect: runtime_error wrong_answer ok
# note: coordinates that overflow a float: the worker's check must not fail on them (never infra_error)
from openelm.environments.sodaracer.walker import Walker


def make_walker():
    return Walker([(10**400, 0), (1e308, 1e308), (-1e308, 0.0)], [])
