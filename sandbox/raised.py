"""A candidate's exception as it crosses to its judge: two names and a message, never the object.

The candidate's side (`crossing`) sends the exception's type name, its message (its `str`, cut to
`MAX_MESSAGE_CHARS`) and the name of the builtin exception type it derives from (`ValueError` for
a `class Mine(ValueError)`). The judge's side (`rebuild`) makes, from those strings alone, the
exception the test sees: an instance of a subclass of that builtin type that the judge itself
defines, whose constructor takes the message and nothing else. Nothing the candidate chose reaches
a builtin's constructor or its C code: CPython 3.11's `str()` of a `UnicodeDecodeError` whose
`start` lies far outside its object reads out of bounds and kills the process. A test's `except
ValueError`, `pytest.raises(KeyError)` or `except Exception` catches what it would catch with the
candidate in its own process; `str(error)` is the candidate's message, `error.args` that message.

Some types never arrive as themselves, as PEP 479 turns a generator's StopIteration into a
RuntimeError: `StopIteration` and `StopAsyncIteration` (raised inside the test's `map`, `zip`, `all`
or a generator, they would end its iteration early and let it pass having checked nothing) arrive
as a plain `CandidateRaised`; `SystemExit`, `KeyboardInterrupt`, `GeneratorExit` and any other
exception that is not an `Exception` arrive as a `CandidateExit`, a BaseException as they are, which
the test's `except Exception` does not swallow. Stdlib only: it runs inside the sandbox.
"""

from __future__ import annotations

import builtins
import functools
from typing import Any

MAX_MESSAGE_CHARS = 2000  # of a raised exception's message
MAX_NAME_CHARS = 100  # of its type's name
# The builtin exception types, as they were when the judge started (before any test ran).
_BUILTIN: dict[str, type[BaseException]] = {
    name: kind
    for name, kind in vars(builtins).items()
    if isinstance(kind, type) and issubclass(kind, BaseException)
}
# Exceptions whose type the test's own machinery acts on: never raised as themselves.
_ENDS_ITERATION = frozenset({"StopIteration", "StopAsyncIteration"})


class _Shown:
    """What every exception made from a candidate's has: its message, and its type's name."""

    type_name: str

    def __init__(self, message: str = "", type_name: str = "") -> None:
        BaseException.__init__(self, message)  # type: ignore[arg-type]
        self.type_name = type_name or type(self).__name__

    def __str__(self) -> str:
        args = self.args  # type: ignore[attr-defined]
        return args[0] if len(args) == 1 and type(args[0]) is str else BaseException.__str__(self)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"{self.type_name}({str(self)!r})"


class CandidateRaised(_Shown, Exception):
    """An exception the candidate raised, as the judge made it; the base of every such type that
    derives from `Exception`, and itself the type of a StopIteration or StopAsyncIteration."""


class CandidateExit(_Shown, BaseException):
    """The candidate raised an exception that is not an `Exception` (SystemExit, KeyboardInterrupt,
    GeneratorExit, ...): a BaseException, so that a test's `except Exception` does not swallow it."""


# -- the candidate's side ---------------------------------------------------------------------------


def crossing(error: BaseException) -> list[Any]:
    """What crosses of `error`: [its type's name, its message, the builtin type it derives from]."""
    return [_type_name(error), _message(error), _builtin_base(error)]


def _type_name(error: BaseException) -> str:
    try:
        name = type(error).__name__  # a metaclass may make it anything
    except BaseException:
        return "BaseException"
    return name[:MAX_NAME_CHARS] if type(name) is str else "BaseException"


def _message(error: BaseException) -> str:
    try:
        message = str(error)
    except BaseException:  # a __str__ that raises, recurses, or an int too long to print
        return ""
    return message[:MAX_MESSAGE_CHARS] if type(message) is str else ""


def _builtin_base(error: BaseException) -> str | None:
    try:
        for kind in type(error).__mro__:
            if _BUILTIN.get(kind.__name__) is kind:
                return kind.__name__
    except BaseException:
        pass
    return None


# -- the judge's side -------------------------------------------------------------------------------


def rebuild(name: object, message: object, base: object) -> BaseException:
    """The exception the test sees for a candidate's that crossed as `crossing` wrote it (any
    values, as a forged reply may hold): made by the judge from the strings alone."""
    shown = name if type(name) is str and name.isidentifier() and len(name) <= MAX_NAME_CHARS else ""
    text = message[:MAX_MESSAGE_CHARS] if type(message) is str else ""
    kind = _safe_type(base) if type(base) is str else CandidateExit
    return kind(text, shown or (base if type(base) is str and base in _BUILTIN else "BaseException"))


def _safe_type(base: str) -> type[BaseException]:
    """The type the judge raises for a candidate's exception deriving from builtin `base`."""
    kind = _BUILTIN.get(base)
    if kind is None or not issubclass(kind, Exception):
        return CandidateExit
    if kind is Exception or base in _ENDS_ITERATION or issubclass(kind, BaseExceptionGroup):
        return CandidateRaised
    return _made(base)


@functools.cache  # called with the names of builtins only: a forged name never grows it
def _made(base: str) -> type[BaseException]:
    """A subclass of builtin `base` whose own __init__, __str__ and __repr__ come before the
    builtin's: it keeps the message and nothing else."""
    kind = _BUILTIN[base]
    methods = {key: vars(_Shown)[key] for key in ("__init__", "__str__", "__repr__")}
    try:
        made = type(kind.__name__, (kind, CandidateRaised), {**methods, "__module__": __name__})
        str(made("probe", base))
    except Exception:  # a builtin that cannot be made this way: the plain type
        return CandidateRaised
    return made
