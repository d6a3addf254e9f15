"""A candidate's exception as the judge makes it (sandbox.raised): from names and a message alone."""

from __future__ import annotations

import builtins
import traceback

import pytest

from evalfarm.sandbox import raised

BUILTIN_EXCEPTIONS = sorted(
    name
    for name, kind in vars(builtins).items()
    if isinstance(kind, type) and issubclass(kind, BaseException)
)
NEVER_THEMSELVES = {"StopIteration", "StopAsyncIteration", "ExceptionGroup"}


@pytest.mark.parametrize("name", BUILTIN_EXCEPTIONS)
def test_every_builtin_exception_arrives_as_a_type_the_test_catches_the_same_way(name: str) -> None:
    builtin = getattr(builtins, name)
    error = raised.rebuild("Mine", "a message", name)
    if not issubclass(builtin, Exception):
        assert type(error) is raised.CandidateExit and not isinstance(error, Exception)
    elif name in NEVER_THEMSELVES:
        assert type(error) is raised.CandidateRaised and not isinstance(error, builtin)
    else:
        assert isinstance(error, builtin) and isinstance(error, raised.CandidateRaised)
        assert type(error) is not builtin
    assert (str(error), error.args, repr(error)) == ("a message", ("a message",), "Mine('a message')")
    assert traceback.format_exception(error)  # printing it does not fail


def test_what_the_candidates_side_sends() -> None:
    class Mine(KeyError):
        pass

    assert raised.crossing(Mine("k")) == ["Mine", "'k'", "KeyError"]
    assert raised.crossing(OSError(2, "gone")) == ["FileNotFoundError", "[Errno 2] gone", "FileNotFoundError"]

    class Loops(ValueError):
        def __str__(self) -> str:
            return str(self)

    assert raised.crossing(Loops()) == ["Loops", "", "ValueError"]
    assert len(raised.crossing(ValueError("x" * 10**6))[1]) == raised.MAX_MESSAGE_CHARS


@pytest.mark.parametrize(
    ("name", "message", "base"),
    [
        (None, None, None),
        ([1], {"#": "set"}, "ValueError"),
        ("x" * 1000, "m", "NoSuchError"),
        ("not an identifier", "m", 7),
        ("E", "m" * 10**6, "UnicodeDecodeError"),
    ],
)
def test_a_forged_reply_makes_an_exception_from_what_is_plain(
    name: object, message: object, base: object
) -> None:
    error = raised.rebuild(name, message, base)
    assert isinstance(error, raised.CandidateRaised | raised.CandidateExit)
    assert len(str(error)) <= raised.MAX_MESSAGE_CHARS and len(error.type_name) <= raised.MAX_NAME_CHARS


def test_forged_names_never_grow_what_the_judge_keeps() -> None:
    for index in range(1000):
        raised.rebuild("E", "m", f"Forged{index}Error")
    assert raised._made.cache_info().currsize <= len(BUILTIN_EXCEPTIONS)
