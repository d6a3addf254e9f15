"""`query_cppn`: a grid of joints connected by functions of their coordinates (OpenELM's CPPN seeds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openelm.environments.sodaracer.walker.walk_creator import walker_creator

Pairwise = Callable[[int, int, int, int], Any]


def query_cppn(
    wc: walker_creator, xgrid: int, ygrid: int, scale: float, connect_func: Pairwise, amp_func: Pairwise,
    phase_func: Pairwise,
) -> dict[tuple[int, int], tuple[float, float]]:  # fmt: skip
    """Add an `xgrid` x `ygrid` grid of joints `scale` apart, and a muscle between each pair that
    `connect_func` accepts, with the amplitude and phase the other two give."""
    joints = {(x, y): wc.add_joint(x * scale, y * scale) for x in range(xgrid) for y in range(ygrid)}
    for x1 in range(xgrid):
        for y1 in range(ygrid):
            for x2 in range(x1, xgrid):
                for y2 in range(y1, ygrid):
                    if x1 == y1 and x2 == y2:
                        continue
                    if connect_func(x1, y1, x2, y2):
                        amplitude, phase = amp_func(x1, y1, x2, y2), phase_func(x1, y1, x2, y2)
                        wc.add_muscle(joints[(x1, y1)], joints[(x2, y2)], amplitude, phase)
    return joints
