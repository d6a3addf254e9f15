"""Resource limits of one sandboxed run: policy as data, units in the field names."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Limits:
    """Caps for one run. Defaults are restrictive; envs override them per job within MAX_LIMITS."""

    wall_s: float = 10.0
    cpu_s: float = 5.0
    memory_mb: int = 512
    output_bytes: int = 1 << 20
    file_size_mb: int = 16
    workdir_mb: int = 32
    open_files: int = 64
    processes: int = 32
    # A compiled program's compile, a run of its own before the tests (see sandbox.languages).
    compile_wall_s: float = 30.0
    compile_memory_mb: int = 1024

    def merged(self, overrides: Mapping[str, Any] | None) -> Limits:
        """A copy with `overrides` applied; raises ValueError naming the bad field."""
        if not overrides:
            return self
        if not isinstance(overrides, Mapping):
            raise ValueError("limits: must be an object")
        values = self.to_dict()
        for name, value in overrides.items():
            if name not in values:
                raise ValueError(f"limits.{name}: unknown limit (known: {', '.join(values)})")
            kind = type(values[name])
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"limits.{name}: must be a number")
            if value <= 0 or value > getattr(MAX_LIMITS, name):
                raise ValueError(f"limits.{name}: must be in (0, {getattr(MAX_LIMITS, name)}]")
            values[name] = kind(value) if kind is float else int(value)
        return Limits(**values)

    def to_dict(self) -> dict[str, Any]:
        """The limits as a JSON-ready dict (stamped on every result).

        Built field by field: every value is a number, so `dataclasses.asdict`'s recursive deep copy
        would only cost time (a tenth of a millisecond per job, twice per job).
        """
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


# What no job may ask for, whatever its env: a job asking for more is invalid.
MAX_LIMITS = Limits(
    wall_s=600.0,
    cpu_s=600.0,
    memory_mb=8192,
    output_bytes=64 << 20,
    file_size_mb=1024,
    workdir_mb=1024,
    open_files=1024,
    processes=256,
    compile_wall_s=300.0,
    compile_memory_mb=8192,
)
