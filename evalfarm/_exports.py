"""Names a package exports lazily (PEP 562): imported from their module on first use, so that
importing the package itself costs nothing."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy(package: str, exports: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """The `__all__` and the module `__getattr__` of `package`, whose names are `exports` (name ->
    the module defining it)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name]), name)

    return sorted(exports), __getattr__
