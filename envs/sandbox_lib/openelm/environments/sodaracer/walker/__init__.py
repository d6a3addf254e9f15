"""OpenELM's Sodarace walker API: `from openelm.environments.sodaracer.walker import walker_creator`."""

from openelm.environments.sodaracer.walker.CPPN_mutable import query_cppn
from openelm.environments.sodaracer.walker.walk_creator import Walker, walker_creator

__all__ = ["Walker", "query_cppn", "walker_creator"]
