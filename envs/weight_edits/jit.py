"""How the weight-edit grader compiles its hot loops (numba), in one place.

Compiled functions are cached on disk (in `__pycache__` next to their module when it is writable,
else in numba's user-wide cache directory), so a worker loads them in well under a second instead
of compiling them again; where neither can be written they are compiled in memory on first use.
numba keys a cached function on its own source file only, while these functions inline and call
each other across modules: here the key is a hash of every module of this package, so a change
anywhere compiles everything again and a stale kernel is never loaded.

No `fastmath` but for plain sums of products (`jit_sums`): the policy's error bounds assume IEEE
arithmetic as written everywhere else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numba
from llvmlite import ir
from numba.core import caching, cgutils, types
from numba.extending import intrinsic

F = TypeVar("F", bound=Callable[..., Any])

# error_model="numpy": float division by zero gives inf or nan (the bounds treat both as "uncertain")
# instead of a Python exception, which also spares every division a check.
_OPTIONS: dict[str, Any] = {"error_model": "numpy", "_nrt": False}
_PACKAGE = Path(__file__).resolve().parent


def _package_stamp() -> str:
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


_STAMP = _package_stamp()


class _PackageStamp:
    """A locator mixin whose freshness stamp is the whole package's source hash."""

    def get_source_stamp(self) -> str:
        return _STAMP


class _InTreeLocator(_PackageStamp, caching.InTreeCacheLocator):
    pass


class _UserWideLocator(_PackageStamp, caching.UserWideCacheLocator):
    pass


class _CacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [_InTreeLocator, _UserWideLocator]


class _Cache(caching.FunctionCache):
    _impl_class = _CacheImpl


def _compile(function: F, options: dict[str, Any]) -> F:
    dispatcher = numba.njit(**options)(function)
    try:
        dispatcher._cache = _Cache(function)
    except RuntimeError:  # "cannot cache function ...: no locator available": compile in memory
        pass
    return dispatcher


def jit(function: F) -> F:
    """`numba.njit`, cached on disk where possible."""
    return _compile(function, _OPTIONS)


def jit_inline(function: F) -> F:
    """`jit`, inlined into its compiled callers.

    For the small functions of the per-step loop: calls between compiled functions are not inlined
    otherwise, and every array view passed costs two atomic reference-count updates.
    """
    return _compile(function, {**_OPTIONS, "inline": "always"})


def jit_sums(function: F) -> F:
    """`jit` for a function that only adds up products: it may reorder and fuse them (SIMD).

    Only for sums whose error is bounded for any order and any fusing (the classical dot-product
    bound): the compiler may then vectorise the reduction, which IEEE order forbids. Not inlined,
    so its flags stay its own.
    """
    return _compile(function, {**_OPTIONS, "fastmath": {"reassoc", "contract"}})


@intrinsic
def _read_cycle_counter(typingctx: Any) -> Any:
    """The CPU's cycle counter (llvm.readcyclecounter: rdtsc on x86), for profiling only."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter"
        )
        return builder.call(function, [])

    return types.uint64(), codegen


@jit_inline
def cycles() -> int:
    """The CPU's cycle counter, in compiled code (a profiling aid: it costs ~10 ns a read)."""
    return _read_cycle_counter()  # type: ignore[call-arg]
