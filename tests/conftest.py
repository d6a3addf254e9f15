"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalfarm.envs import Context


@pytest.fixture(scope="module")
def ctx() -> Iterator[Context]:
    """A scoring context with a real sandbox slot, shared by one module's tests."""
    context = Context(slot=0)
    yield context
    context.close()
