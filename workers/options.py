"""Command-line helpers shared by the farm's subcommands."""

from __future__ import annotations

import argparse
from typing import Any

from evalfarm.broker.settings import Settings


def cpu_list(text: str) -> list[int]:
    """Parse a CPU list as taskset writes it: `0,2,4-7`."""
    cpus: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            cpus.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU list: {text!r} (e.g. 0,2,4-7)") from None
    if not cpus or min(cpus) < 0:
        raise argparse.ArgumentTypeError(f"not a CPU list: {text!r}")
    return sorted(set(cpus))


def settings_from(**overrides: Any) -> Settings:
    """Settings from the environment, with the command line's values (those given) on top."""
    given = {name: value for name, value in overrides.items() if value is not None}
    return Settings.from_env(**given)
