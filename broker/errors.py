"""The errors of the broker layer: one root, a shallow tree."""

from __future__ import annotations


class FarmError(Exception):
    """Root of the errors raised by the farm's broker layer and client."""


class ConfigError(FarmError):
    """The settings cannot describe a working farm (no broker, inconsistent limits)."""
