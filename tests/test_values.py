"""Plain values as data (sandbox.values): type-faithful round trips, and a decoder that builds nothing
but plain values, whatever bytes it is given."""

from __future__ import annotations

import collections
import decimal
import enum
import fractions
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalfarm.sandbox import values


def same(left: Any, right: Any) -> bool:
    """The same value, type for type (nan equal to nan, -0.0 apart from 0.0)."""
    if type(left) is not type(right):
        return False
    if type(left) is float:
        return (math.isnan(left) and math.isnan(right)) or (
            left == right and math.copysign(1, left) == math.copysign(1, right)
        )
    if type(left) is complex:
        return same(left.real, right.real) and same(left.imag, right.imag)
    if type(left) in (list, tuple):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if type(left) is dict:
        return list(left) == list(right) and all(same(left[key], right[key]) for key in left)
    return bool(left == right)


keys = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(), st.floats(allow_nan=False), st.binary(max_size=8)
)
plain = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.binary(), st.complex_numbers(),
        st.fractions(), st.decimals(allow_nan=False),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(keys, children, max_size=5),
        st.frozensets(keys, max_size=5),
        st.sets(keys, max_size=5),
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(plain)
def test_every_plain_value_comes_back_the_same_type_for_type(value: Any) -> None:
    assert same(values.decode(values.encode(value)), value)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_to_a_plain_value_or_a_decode_error(data: bytes) -> None:
    try:
        decoded = values.decode(data)
    except values.DecodeError:
        return
    values.encode(decoded)  # whatever came out is itself a plain value


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.floats()),
                    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(), c, max_size=4)),
                    max_leaves=20))  # fmt: skip
def test_json_compatible_decoding_is_what_json_dumps_wrote(value: Any) -> None:
    import json

    assert json.dumps(values.decode(values.encode(value), json_compatible=True)) == json.dumps(value)


def test_the_distinctions_a_test_relies_on_survive() -> None:
    for value in (True, 1, 1.0, (1,), [1], "1", b"1", None, -0.0, float("inf"), 10**5000, {1: (2,)}):
        assert same(values.decode(values.encode(value)), value), value
    assert type(values.decode(values.encode(True))) is bool
    assert math.isnan(values.decode(values.encode(float("nan"))))


class Color(enum.IntEnum):
    RED = 3


class Lying(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class LyingStr(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (Color.RED, 3),
        (Lying(0), 0),
        (LyingStr("a"), "a"),
        (collections.namedtuple("Point", "x y")(1, 2), (1, 2)),
        (collections.Counter("aab"), {"a": 2, "b": 1}),
        (collections.OrderedDict(b=1, a=2), {"b": 1, "a": 2}),
        (fractions.Fraction(1, 3), fractions.Fraction(1, 3)),
        (decimal.Decimal("1.10"), decimal.Decimal("1.10")),
        (range(1, 9, 2), range(1, 9, 2)),
        ({"a": 1}.keys(), {"a"}),
    ],
    ids=[
        "int-enum",
        "lying-int",
        "lying-str",
        "namedtuple",
        "counter",
        "ordered-dict",
        "fraction",
        "decimal",
        "range",
        "keys-view",
    ],
)
def test_a_subclass_travels_as_its_plain_base_value(value: Any, plain: Any) -> None:
    decoded = values.decode(values.encode(value))
    assert same(decoded, plain) and type(decoded) is type(plain)


def test_an_iterator_is_listed_and_arrives_as_an_iterator() -> None:
    decoded = values.decode(values.encode(x * x for x in range(4)))
    assert decoded != [0, 1, 4, 9] and list(decoded) == [0, 1, 4, 9]


def test_numpy_values_arrive_as_arrays_and_scalars() -> None:
    import numpy

    array = numpy.arange(6, dtype=numpy.int32).reshape(2, 3)
    decoded = values.decode(values.encode(array))
    assert isinstance(decoded, numpy.ndarray) and decoded.dtype == numpy.int32 and (decoded == array).all()
    assert values.decode(values.encode(array), json_compatible=True) == [[0, 1, 2], [3, 4, 5]]
    assert same(values.decode(values.encode(numpy.float32(1.5))), 1.5)
    assert values.decode(values.encode(numpy.bool_(True))) is True


class Opaque:
    pass


def loop() -> list[Any]:
    looped: list[Any] = []
    looped.append(looped)
    return looped


@pytest.mark.parametrize(
    "value", [Opaque(), lambda: 1, object(), print, type, Exception("x"), loop()],
    ids=["object", "lambda", "bare-object", "builtin", "type", "exception", "self-containing"],
)  # fmt: skip
def test_anything_else_is_unencodable(value: Any) -> None:
    with pytest.raises(values.Unencodable):
        values.encode(value)


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 20000,
        b'{"#": "evil", "v": 1}',
        b'{"a": 1}',
        b'{"#": "tuple", "v": [], "extra": 1}',
        b'{"#": "dict", "v": [[1], 2]}',
        b'{"#": "dict", "v": [1]}',
        b'{"#": "int", "v": "zz"}',
        b"9" * 5000,
        b'{"#": "set", "v": 3}',
        b'{"#": "ndarray", "dtype": "int64", "shape": [3], "v": [1, 2]}',
        b'{"#": "fraction", "v": [1, 0]}',
        b"\xff\xfe",
        b"",
    ],
)
def test_malformed_bytes_are_a_decode_error(data: bytes) -> None:
    with pytest.raises(values.DecodeError):
        values.decode(data)


def test_a_long_number_is_refused_whatever_the_process_digit_limit_but_a_long_string_is_not() -> None:
    import sys

    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # as a library may have done
    try:
        with pytest.raises(values.DecodeError):
            values.decode(b"9" * 5000)
        assert values.decode(values.encode("9" * 5000)) == "9" * 5000
        assert values.decode(values.encode(10**6000)) == 10**6000
    finally:
        sys.set_int_max_str_digits(limit)


def test_json_decoding_refuses_what_json_cannot_hold() -> None:
    for value in ({1, 2}, b"x", 1j, range(3)):
        with pytest.raises(values.DecodeError):
            values.decode(values.encode(value), json_compatible=True)
    assert values.decode(values.encode({1: (1, 2), None: True, 1.5: [2]}), json_compatible=True) == {
        "1": [1, 2],
        "null": True,
        "1.5": [2],
    }
