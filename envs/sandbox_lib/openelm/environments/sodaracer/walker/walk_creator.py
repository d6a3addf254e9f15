"""A Sodarace walker: joints and muscles, built with `walker_creator` as in the ELM paper (p. 16).

The same API, dictionary shape and validity rule as OpenELM's library copy
(`openelm/environments/sodaracer/walker/walk_creator.py`): joints are stored scaled by 0.22 with y
flipped; a muscle is `[joint index, joint index, {"type", "amplitude", "phase"}]`, of type
"distance" when both amplitude and phase are 0; `to_dict()` is `{"joints": [...], "muscles": [...]}`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

SCALE = 0.22  # OpenELM shrinks seed programs' coordinates so evolved walkers move more
MAX_MUSCLES_PER_JOINT = 10
MAX_MUSCLE_STRENGTH = 10
MIN_JOINT_DISTANCE = 0.003


@dataclasses.dataclass
class Walker:
    """A walker body: what `make_walker()` returns and the simulator loads."""

    joints: list[tuple[float, float]]
    muscles: list[list[Any]]

    def to_dict(self) -> dict[str, Any]:
        """`{"joints": [(x, y), ...], "muscles": [[i, j, {...}], ...]}`, the walker's own lists."""
        return self.__dict__

    def validate(self) -> bool:
        """True when the body cannot break the physics engine: it is not empty, no muscle is stronger
        than 10 (the amplitude, signed, of "muscle" entries), no joint ends more than 10 muscles, and
        no two joints are closer than 0.003."""
        if not self.joints and not self.muscles:
            return False
        if any(m[-1]["type"] == "muscle" and m[-1]["amplitude"] > MAX_MUSCLE_STRENGTH for m in self.muscles):
            return False
        for joint in self.joints:
            index = self.joints.index(joint)
            if sum(m[:2].count(index) for m in self.muscles) > MAX_MUSCLES_PER_JOINT:
                return False
        return not any(  # as OpenELM compares: a distance that is nan is not too close
            math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) < MIN_JOINT_DISTANCE
            for a, b in itertools.combinations(self.joints, r=2)
        )


class walker_creator:  # OpenELM's name, which programs use
    """Builds a walker joint by joint and muscle by muscle."""

    def __init__(self) -> None:
        self.joints: list[tuple[float, float]] = []
        self.muscles: list[list[Any]] = []

    def add_joint(self, x: float, y: float) -> tuple[float, float]:
        """Add a joint at (x, y); returns it, as stored (scaled, y flipped)."""
        joint = (x * SCALE, -y * SCALE)
        self.joints.append(joint)
        return joint

    def add_muscle(
        self, j0: tuple[float, float], j1: tuple[float, float], amplitude: float = 0.0, phase: float = 0.0
    ) -> list[Any]:
        """Connect two joints (a ValueError if either is not one); a distance muscle when both
        amplitude and phase are 0."""
        kind = "muscle" if amplitude != 0.0 or phase != 0.0 else "distance"
        muscle = [
            self.joints.index(j0),
            self.joints.index(j1),
            {"type": kind, "amplitude": amplitude, "phase": phase},
        ]
        self.muscles.append(muscle)
        return muscle

    def get_walker(self) -> Walker:
        """The walker built so far (sharing its lists)."""
        return Walker(self.joints, self.muscles)
