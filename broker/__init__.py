"""broker layer."""
