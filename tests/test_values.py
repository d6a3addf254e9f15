"""Plain values as data (sandbox.values): type-faithful round trips, and a decoder that builds nothing
but plain values, whatever bytes it is given."""

from __future__ import annotations

import base64
import collections
import decimal
import enum
import fractions
import json
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


# -- what decoding accepts, encoding writes again ---------------------------------------------------------

TAGS = ("int", "tuple", "set", "frozenset", "dict", "bytes", "bytearray", "complex", "range", "fraction",
        "decimal", "iter", "ndarray", "evil")  # fmt: skip
DTYPES = ("bool", "int8", "int64", "uint8", "uint64", "float16", "float32", "float64", "float128",
          "complex64", "complex128", "complex256", ">i4", ">f8", "<U3", "|S2", "<i4", "i4", "object",
          "datetime64[D]", "timedelta64[s]", "|V8", "i4,i4", "(2,)i4", "<U0", "O")  # fmt: skip
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4),
    st.integers(min_value=-(1 << 70), max_value=1 << 70).map(lambda n: {"#": "int", "v": format(n, "x")}),
)  # fmt: skip
complex_items = st.tuples(st.floats(), st.floats()).map(lambda pair: {"#": "complex", "v": list(pair)})
bytes_items = st.binary(max_size=3).map(lambda b: {"#": "bytes", "v": base64.b64encode(b).decode()})
leaves = st.one_of(
    st.booleans(), st.integers(-300, 300), st.integers(), st.floats(), st.text(max_size=3), bytes_items,
    complex_items,
)  # fmt: skip
# The items an array of each kind has (`tolist`), to make most arrays of the strategy well formed.
KIND_ITEMS = {"b": st.booleans(), "i": st.integers(-300, 300), "u": st.integers(0, 300), "f": st.floats(),
              "c": complex_items, "U": st.text(max_size=4), "S": bytes_items}  # fmt: skip


def nested(shape: list[int], leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Items of the given shape (a strategy for nested lists)."""
    if not shape:
        return leaf
    return st.lists(nested(shape[1:], leaf), min_size=shape[0], max_size=shape[0])


def items_of(dtype: str) -> st.SearchStrategy[Any]:
    import numpy

    try:
        kind = numpy.dtype(dtype).kind
    except TypeError:
        kind = "O"
    return KIND_ITEMS.get(kind, leaves)


arrays = st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(0, 3), max_size=3), st.booleans()).flatmap(
    lambda spec: nested(spec[1], items_of(spec[0]) if spec[2] else leaves).map(
        lambda items: {"#": "ndarray", "dtype": spec[0], "shape": spec[1], "v": items}
    )
)


def tagged(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    payloads = st.one_of(
        st.lists(children, max_size=4), st.text(alphabet="0123456789abcdef-_x ", max_size=6),
        st.binary(max_size=4).map(lambda b: base64.b64encode(b).decode()),
        st.lists(st.one_of(st.integers(-5, 5), st.floats()), min_size=2, max_size=3),
        st.decimals().map(str),
    )  # fmt: skip
    return st.builds(lambda tag, v: {"#": tag, "v": v}, st.sampled_from(TAGS), payloads)


documents = st.recursive(
    st.one_of(json_scalars, arrays),
    lambda children: st.one_of(st.lists(children, max_size=4), tagged(children)),
    max_leaves=25,
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(documents, arrays))
def test_whatever_decoding_accepts_encoding_writes_again(document: Any) -> None:
    data = json.dumps(document).encode()
    try:
        decoded = values.decode(data)
    except values.DecodeError:
        return
    again = values.encode(decoded)  # never Unencodable, nor any other error
    assert canonical(values.encode(values.decode(again))) == canonical(again)


def canonical(data: bytes) -> str:
    """An encoding's text with the items of each set in one order (a set's order is its hashes')."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if isinstance(node, dict):
            node = {key: walk(item) for key, item in node.items()}
            if node.get("#") in ("set", "frozenset"):
                node["v"] = sorted(node["v"], key=json.dumps)
        return node

    return json.dumps(walk(json.loads(data)))


def chain(depth: int, kind: str) -> Any:
    """A scalar inside `depth` containers of one kind, as data."""
    document: Any = 0
    for _ in range(depth):
        document = [document] if kind == "list" else {"#": kind, "v": [document]}
    return document


@pytest.mark.parametrize("kind", ["list", "tuple", "frozenset", "iter"])
@pytest.mark.parametrize("depth", [values.MAX_DEPTH - 1, values.MAX_DEPTH, values.MAX_DEPTH + 1, 300])
def test_one_nesting_cap_for_decoding_and_encoding(kind: str, depth: int) -> None:
    data = json.dumps(chain(depth, kind)).encode()
    if depth > values.MAX_DEPTH:
        with pytest.raises(values.DecodeError, match="nested more than"):
            values.decode(data)
        with pytest.raises(values.DecodeError, match="nested more than"):
            values.decode(data, json_compatible=kind in ("list", "tuple", "iter"))
        value: Any = 0
        for _ in range(depth):
            value = [value]
        with pytest.raises(values.Unencodable, match="nested more than"):
            values.encode(value)
    else:
        values.encode(values.decode(data))


def test_a_list_700_deep_is_refused_where_it_used_to_decode_and_then_fail_to_encode() -> None:
    with pytest.raises(values.DecodeError, match="nested more than"):
        values.decode(b"[" * 700 + b"]" * 700)


def wrapped(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def test_a_dict_and_an_array_count_as_the_levels_they_nest() -> None:
    import numpy

    inner = chain(values.MAX_DEPTH - 1, "list")
    assert values.decode(values.encode({"k": inner}))["k"] == inner
    with pytest.raises(values.DecodeError):
        values.decode(json.dumps({"#": "dict", "v": [0, chain(values.MAX_DEPTH, "list")]}))
    array = numpy.zeros((1, 1, 1))
    fits = values.encode(wrapped(array, values.MAX_DEPTH - 3))
    assert values.decode(fits) is not None
    with pytest.raises(values.Unencodable):
        values.encode(wrapped(array, values.MAX_DEPTH - 2))
    with pytest.raises(values.DecodeError):
        values.decode(b"[" + fits + b"]")


@pytest.mark.parametrize(
    "dtype",
    ["datetime64[D]", "datetime64[ns]", "timedelta64[s]", "object", "V8", "i4,i4", "float128", "complex256"],
)
def test_an_array_of_a_dtype_whose_items_are_not_plain_values_crosses_neither_way(dtype: str) -> None:
    import numpy

    with pytest.raises(values.Unencodable, match="dtype"):
        values.encode(numpy.zeros(2, dtype=dtype))
    document = {"#": "ndarray", "dtype": str(numpy.dtype(dtype)), "shape": [1], "v": [1]}
    with pytest.raises(values.DecodeError, match="dtype"):
        values.decode(json.dumps(document))


def test_every_dtype_that_crosses_comes_back_the_same() -> None:
    import numpy

    for dtype in ("bool", "int8", "uint16", "int64", "float16", "float64", "complex64", ">i4", "<U3", "S2"):
        array = numpy.zeros((2, 3), dtype=dtype)
        decoded = values.decode(values.encode(array))
        assert decoded.dtype == array.dtype and decoded.shape == (2, 3) and (decoded == array).all()


def test_a_range_of_huge_ints_crosses() -> None:
    value = range(0, 10**5000, 10**4500)
    assert values.decode(values.encode(value)) == value
