"""Plain values as data: the only way a value crosses between a judged program and its judge.

A candidate's return value is encoded in the candidate's own process and decoded by whoever judges
it (a judge process, or the worker). Decoding builds nothing but plain values, whatever the bytes
say: no class of the sender's, no pickle, no code. So an object whose `__eq__` is always true, or an
`int` subclass that lies about itself, arrives as the plain value it encodes, or not at all.

The encoding is JSON, with tagged objects for what JSON lacks. Type-faithful where judging needs it:
bool is not int, tuple is not list, floats keep -0.0, nan and inf, ints of any size, sets, bytes.

    None, bool, str, list, float      JSON's own (nan and inf as NaN and Infinity)
    int                               a JSON number; {"#": "int", "v": hex} past 4,000 digits
    tuple, set, frozenset             {"#": "tuple" | "set" | "frozenset", "v": [items]}
    dict                              {"#": "dict", "v": [key, value, key, value, ...]}
    bytes, bytearray                  {"#": "bytes" | "bytearray", "v": base64}
    complex                           {"#": "complex", "v": [re, im]}
    range                             {"#": "range", "v": [start, stop, step]}
    Fraction                          {"#": "fraction", "v": [numerator, denominator]}
    Decimal                           {"#": "decimal", "v": its text}
    a generator or other iterator     {"#": "iter", "v": [items]} (listed; decoded as an iterator)
    a numpy array / scalar            {"#": "ndarray", "dtype", "shape", "v": nested list} / the scalar

Subclasses of these travel as their base type's value (a namedtuple as a tuple, a Counter as a dict).
Anything else cannot be encoded: `Unencodable`. Stdlib only: it runs inside the sandbox.

What decoding accepts, encoding writes again (so a judge can pass any value it received back to
the candidate): both sides refuse a value nested more than `MAX_DEPTH` containers deep (a list,
tuple, set, frozenset, dict or iterator is one level; an array, one per dimension), and an array
whose dtype is not one of `DTYPES` (booleans, integers, reals, complex numbers, fixed-width
strings and bytes: those whose items are the plain values above).
"""

from __future__ import annotations

import base64
import decimal
import fractions
import functools
import json
import re
from collections.abc import Callable
from typing import Any

BIG_INT_DIGITS = 4000  # below Python's int/str conversion limit (4,300 digits)
_BIG_INT = 10**BIG_INT_DIGITS
_LONG_NUMBER = re.compile(rb"[0-9]{%d}" % (BIG_INT_DIGITS + 1))
MAX_ITER_ITEMS = 1 << 20  # a generator is listed up to this many items
# Containers within containers, the same for encoding and decoding: far past any test's values, and
# far below what the encoder's and decoder's recursion can reach (each level costs them 2 frames).
MAX_DEPTH = 100
# The dtypes an array may have, as numpy writes them: those whose items are plain values.
DTYPES = re.compile(
    r"bool|u?int(8|16|32|64)|float(16|32|64)|complex(64|128)|[<>]([iu][1248]|f[248]|c(8|16))"
    r"|[<>|][US][1-9][0-9]{0,6}"
)
_TOO_DEEP = f"the value is nested more than {MAX_DEPTH} containers deep (or contains itself)"


class ValuesError(Exception):
    """Root of this module's errors."""


class Unencodable(ValuesError):
    """The value is not one of the plain values that may cross (the message names its type)."""


class DecodeError(ValuesError, ValueError):
    """The bytes are not an encoding of a plain value (or, for JSON, of a JSON value)."""


# -- encoding -------------------------------------------------------------------------------------


def encode(value: Any, max_depth: int = MAX_DEPTH) -> bytes:
    """The encoding of `value`; raises Unencodable for anything that is not a plain value, or that
    nests more than `max_depth` containers deep."""
    try:
        return json.dumps(_tagged(value, max_depth), allow_nan=True, check_circular=False).encode()
    except RecursionError:  # a caller deep in its own stack
        raise Unencodable("the value is nested too deeply (or contains itself)") from None


def _tagged(value: Any, room: int) -> Any:
    """`value` as JSON-ready data; `room`: how many more containers deep it may nest."""
    kind = type(value)
    if kind is str or kind is bool or value is None or kind is float:
        return value
    if kind is int:
        return _int(value)
    if kind is list:
        return _listed(value, room)
    encoder = _ENCODERS.get(kind)
    if encoder is not None:
        return encoder(value, room)
    return _tagged_other(value, kind, room)


def _listed(items: Any, room: int) -> list[Any]:
    """The items of one container, one level down."""
    if room <= 0:
        raise Unencodable(_TOO_DEEP)
    return [_tagged(item, room - 1) for item in items]


def _int(value: int) -> Any:
    if -_BIG_INT < value < _BIG_INT:
        return value
    return {"#": "int", "v": format(value, "x")}


def _items(tag: str) -> Callable[[Any, int], Any]:
    return lambda value, room: {"#": tag, "v": _listed(value, room)}


def _dict(value: dict[Any, Any], room: int) -> Any:
    if room <= 0:
        raise Unencodable(_TOO_DEEP)
    flat = []
    for key, item in dict.items(value):
        flat.append(_tagged(key, room - 1))
        flat.append(_tagged(item, room - 1))
    return {"#": "dict", "v": flat}


def _bytes(tag: str) -> Callable[[Any, int], Any]:
    return lambda value, room: {"#": tag, "v": base64.b64encode(value).decode()}


def _iterator(value: Any, room: int) -> Any:
    if room <= 0:
        raise Unencodable(_TOO_DEEP)
    items: list[Any] = []
    for item in value:
        if len(items) == MAX_ITER_ITEMS:
            raise Unencodable(f"the iterator yields more than {MAX_ITER_ITEMS} items")
        items.append(_tagged(item, room - 1))
    return {"#": "iter", "v": items}


_ENCODERS: dict[type, Callable[[Any, int], Any]] = {
    tuple: _items("tuple"),
    set: _items("set"),
    frozenset: _items("frozenset"),
    dict: _dict,
    bytes: _bytes("bytes"),
    bytearray: _bytes("bytearray"),
    complex: lambda value, room: {"#": "complex", "v": [value.real, value.imag]},
    range: lambda value, room: {"#": "range", "v": [_int(value.start), _int(value.stop), _int(value.step)]},
    fractions.Fraction: lambda value, room: {
        "#": "fraction",
        "v": [_int(value.numerator), _int(value.denominator)],
    },
    decimal.Decimal: lambda value, room: {"#": "decimal", "v": str(value)},
}
# Base types a subclass travels as, in the order they are tried (bool before int: bool is final).
_BASES: tuple[tuple[type, Callable[[Any, int], Any]], ...] = (
    (int, lambda value, room: _int(int.__int__(value))),
    (float, lambda value, room: float.__float__(value)),
    (str, lambda value, room: str.__str__(value)),
    (tuple, lambda value, room: _ENCODERS[tuple](tuple.__iter__(value), room)),
    (list, lambda value, room: _listed(list.__iter__(value), room)),
    (dict, _dict),
    (frozenset, lambda value, room: _ENCODERS[frozenset](frozenset.__iter__(value), room)),
    (set, lambda value, room: _ENCODERS[set](set.__iter__(value), room)),
    (bytes, lambda value, room: _ENCODERS[bytes](bytes(value), room)),
)
_SET_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.items()))
_VALUES_VIEW: type = type({}.values())


def _tagged_other(value: Any, kind: type, room: int) -> Any:
    """Subclasses, iterators, dict views and numpy values; Unencodable for the rest."""
    module = getattr(kind, "__module__", "")
    if module == "numpy":
        return _numpy(value, kind, room)
    if hasattr(kind, "__next__") or kind is _VALUES_VIEW:  # a generator, map, zip, ...
        return _iterator(iter(value), room)
    if kind in _SET_VIEWS:
        return _ENCODERS[set](value, room)
    for base, encoder in _BASES:
        if isinstance(value, base):
            return encoder(value, room)
    raise Unencodable(f"a value of type {kind.__qualname__} is not a plain value")


def _numpy(value: Any, kind: type, room: int) -> Any:
    if kind.__name__ == "ndarray":
        if not plain_dtype(value.dtype):
            raise Unencodable(f"a numpy array of dtype {value.dtype} is not a plain value")
        if value.ndim > room:
            raise Unencodable(_TOO_DEEP)
        return {
            "#": "ndarray",
            "dtype": str(value.dtype),
            "shape": list(value.shape),
            "v": _tagged(value.tolist(), room),
        }
    if getattr(value, "shape", None) == () and hasattr(value, "item"):  # a scalar
        item = value.item()
        if type(item).__module__ != "numpy":  # a longdouble's item is itself
            return _tagged(item, room)
    raise Unencodable(f"a value of type numpy.{kind.__qualname__} is not a plain value")


def plain_dtype(dtype: Any) -> bool:
    """Whether an array of this numpy dtype crosses: one of `DTYPES`, whose items are plain values
    (not datetime64, object, void, structured or longdouble dtypes, whose items are other objects)."""
    return (
        dtype.kind in _LEAVES
        and dtype.fields is None
        and dtype.subdtype is None
        and dtype.itemsize > 0
        and DTYPES.fullmatch(str(dtype)) is not None
    )


# The type of an array's items (`tolist`) by its dtype's kind.
_LEAVES: dict[str, type] = {"b": bool, "i": int, "u": int, "f": float, "c": complex, "U": str, "S": bytes}


# -- decoding -------------------------------------------------------------------------------------


def decode(data: bytes | str, json_compatible: bool = False, max_depth: int = MAX_DEPTH) -> Any:
    """The plain value `data` encodes; raises DecodeError for anything else, and for a value that
    `encode` would refuse (nested more than `max_depth` containers deep, an array of another dtype).

    `json_compatible`: build a JSON value instead, as `json.dumps` would have written the original
    (tuples and iterators as lists, arrays as nested lists, dict keys as strings); a value JSON
    cannot hold (a set, bytes, a complex, an int too long to write as decimal) is a DecodeError.
    Dicts are then keyed by strings only, whose hashes are salted per process, so no crafted keys
    can make building them slow.
    """
    depths = _Depths(max_depth)
    hook = functools.partial(_json_untag if json_compatible else _untag, depths)
    options: dict[str, Any] = {"object_pairs_hook": hook}
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if _LONG_NUMBER.search(raw):  # in a number, or maybe only in a string: each int is checked
        options["parse_int"] = _bounded_int
    try:
        value = json.loads(data, **options)
        depths.of(value)
        return value
    except DecodeError:
        raise
    except RecursionError:
        raise DecodeError("nested too deeply") from None
    except (ValueError, TypeError, OverflowError, MemoryError, UnicodeDecodeError) as error:
        raise DecodeError(f"{type(error).__name__}: {error}") from None


class _Depths:
    """How many containers deep decoded values nest, refused past the cap. An iterator's or an
    array's depth is noted as it is built (an iterator's items are out of reach after)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.noted: dict[int, tuple[Any, int]] = {}  # id -> (the value, kept alive; its depth)
        self.nesting: set[type] = {list, tuple, set, frozenset, dict, _TUPLE_ITERATOR}

    def note(self, value: Any, depth: int) -> Any:
        """`value`, whose depth is `depth`; DecodeError past the cap."""
        if depth > self.cap:
            raise DecodeError(_TOO_DEEP)
        self.noted[id(value)] = (value, depth)
        self.nesting.add(type(value))
        return value

    def of(self, value: Any) -> int:
        """The depth of `value` (a scalar: 0; a container of scalars: 1); DecodeError past the cap.
        Walked a level at a time, keeping only the items that nest (most items are scalars)."""
        nesting, deepest, above, level = self.nesting, 0, 0, [value]
        while level:
            below: list[Any] = []
            for item in level:
                kind = type(item)
                if kind is dict:
                    below += [key for key in item if type(key) in nesting]
                    below += [each for each in dict.values(item) if type(each) in nesting]
                elif kind is list or kind is tuple or kind is set or kind is frozenset:
                    below += [each for each in item if type(each) in nesting]
                else:  # a scalar (the top value only), or an iterator or array noted as it was built
                    noted = self.noted.get(id(item))
                    deepest = max(deepest, above + (noted[1] if noted else 0))
                    continue
                deepest = max(deepest, above + 1)
            if deepest > self.cap:
                raise DecodeError(_TOO_DEEP)
            above, level = above + 1, below
        return deepest


_TUPLE_ITERATOR: type = type(iter(()))


def _bounded_int(text: str) -> int:
    """An int literal, refused past BIG_INT_DIGITS: decimal text to int is quadratic, and the
    process's own digit limit may be lifted (a library can), so the cap is ours. Longer ints
    travel as hex."""
    if len(text.lstrip("-")) > BIG_INT_DIGITS:
        raise DecodeError(f"a number of more than {BIG_INT_DIGITS} digits")
    return int(text)


def _untag(depths: _Depths, pairs: list[tuple[str, Any]]) -> Any:
    tag, items = _tag_of(pairs)
    builder = _DECODERS.get(tag)
    if builder is None:
        raise DecodeError(f"unknown tag {tag!r}")
    if tag == "ndarray":
        array = _array(pairs, items, typed=True)
        return depths.note(array, array.ndim)
    if tag == "iter":
        return depths.note(iter(tuple(_list(items))), depths.of(items))
    return builder(items)


def _json_untag(depths: _Depths, pairs: list[tuple[str, Any]]) -> Any:
    tag, items = _tag_of(pairs)
    if tag in ("tuple", "iter"):
        return _list(items)
    if tag == "ndarray":
        return _array(pairs, items, typed=False)
    if tag == "dict":
        pairs_list = _list(items)
        keys = [_json_key(key) for key in pairs_list[0::2]]
        return dict(zip(keys, pairs_list[1::2], strict=False)) if len(pairs_list) % 2 == 0 else _odd()
    raise DecodeError(f"a {tag} is not a JSON value")


def _tag_of(pairs: list[tuple[str, Any]]) -> tuple[str, Any]:
    """The tag and items of a tagged object: exactly `#` and `v` (an ndarray: dtype and shape too)."""
    size = 4 if pairs and pairs[0] == ("#", "ndarray") else 2
    if len(pairs) != size or pairs[0][0] != "#" or pairs[-1][0] != "v" or type(pairs[0][1]) is not str:
        raise DecodeError("a JSON object that is not a tagged value")
    return pairs[0][1], pairs[-1][1]


def _list(items: Any) -> list[Any]:
    if type(items) is not list:
        raise DecodeError("a tagged container without a list of items")
    return items


def _odd() -> Any:
    raise DecodeError("a dict with a key but no value")


def _json_key(key: Any) -> str:
    """A dict key as `json.dumps` writes it; DecodeError where it refuses one."""
    if type(key) is str:
        return key
    if key is True or key is False or key is None:
        return json.dumps(key)
    if type(key) is int:
        return str(key)
    if type(key) is float:
        return json.dumps(key)
    raise DecodeError(f"a dict key of type {type(key).__name__} is not a JSON key")


def _dict_value(items: Any) -> dict[Any, Any]:
    flat = _list(items)
    if len(flat) % 2:
        _odd()
    return dict(zip(flat[0::2], flat[1::2], strict=True))


def _bytes_value(kind: type) -> Callable[[Any], Any]:
    def build(items: Any) -> Any:
        if type(items) is not str:
            raise DecodeError("bytes not given as base64 text")
        return kind(base64.b64decode(items, validate=True))

    return build


def _number_pair(items: Any) -> tuple[Any, Any]:
    if type(items) is not list or len(items) != 2:
        raise DecodeError("a pair of numbers expected")
    return items[0], items[1]


def _complex(items: Any) -> complex:
    real, imag = _number_pair(items)
    if type(real) is not float or type(imag) is not float:
        raise DecodeError("a complex number of two floats expected")
    return complex(real, imag)


def _range(items: Any) -> range:
    if type(items) is not list or len(items) != 3 or any(type(x) is not int for x in items):
        raise DecodeError("a range of three ints expected")
    return range(*items)


def _fraction(items: Any) -> fractions.Fraction:
    numerator, denominator = _number_pair(items)
    if type(numerator) is not int or type(denominator) is not int or denominator <= 0:
        raise DecodeError("a fraction of two ints expected")
    return fractions.Fraction(numerator, denominator)


def _decimal(items: Any) -> decimal.Decimal:
    if type(items) is not str or len(items) > BIG_INT_DIGITS:
        raise DecodeError("a decimal as text expected")
    try:
        return decimal.Decimal(items)
    except decimal.InvalidOperation:
        raise DecodeError("not a decimal") from None


def _big_int(items: Any) -> int:
    if type(items) is not str:
        raise DecodeError("a big int as hex text expected")
    return int(items, 16)  # a power-of-two base: linear, and not subject to the digit limit


def _array(pairs: list[tuple[str, Any]], items: Any, typed: bool) -> Any:
    """A numpy array: rebuilt as one (`typed`), or as its nested list; its dtype, shape and items
    checked first (items of the type its dtype's items are, as `tolist` gives them)."""
    fields = dict(pairs)
    shape, dtype = fields.get("shape"), fields.get("dtype")
    if set(fields) != {"#", "dtype", "shape", "v"} or type(shape) is not list or type(dtype) is not str:
        raise DecodeError("an ndarray needs dtype, shape and v")
    if DTYPES.fullmatch(dtype) is None:
        raise DecodeError(f"an ndarray of dtype {dtype[:64]!r} is not a plain value")
    if any(type(size) is not int or size < 0 for size in shape):
        raise DecodeError("an ndarray whose shape is not a list of sizes")
    if not _has_shape(items, shape, _LEAVES[_kind(dtype)]):
        raise DecodeError("an ndarray whose items do not have its shape and dtype")
    if not typed:
        return items
    import numpy  # only a value that was an array brings numpy in

    try:
        kind = numpy.dtype(dtype)
        if not plain_dtype(kind) or str(kind) != dtype:
            raise DecodeError(f"an ndarray of dtype {dtype!r} is not a plain value")
        with numpy.errstate(all="ignore"):  # a real too large for float16 is inf, as numpy casts it
            return numpy.array(items, dtype=kind).reshape(shape)
    except (TypeError, ValueError, OverflowError, MemoryError, Warning) as error:
        raise DecodeError(f"an ndarray that numpy refuses: {error}") from None


def _kind(dtype: str) -> str:
    """The numpy kind of a dtype name that DTYPES matched (`int8`: i, `>f8`: f, `<U5`: U)."""
    if dtype == "bool":
        return "b"
    if dtype.startswith("uint"):
        return "u"
    return dtype[1] if dtype[0] in "<>|" else dtype[0]


def _has_shape(items: Any, shape: list[int], leaf: type) -> bool:
    if not shape:
        return type(items) is leaf
    if type(items) is not list or len(items) != shape[0]:
        return False
    return all(_has_shape(item, shape[1:], leaf) for item in items)


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "int": _big_int,
    "tuple": lambda items: tuple(_list(items)),
    "set": lambda items: set(_list(items)),
    "frozenset": lambda items: frozenset(_list(items)),
    "dict": _dict_value,
    "bytes": _bytes_value(bytes),
    "bytearray": _bytes_value(bytearray),
    "complex": _complex,
    "range": _range,
    "fraction": _fraction,
    "decimal": _decimal,
    "iter": _list,  # built by _untag, which notes its depth
    "ndarray": lambda items: items,
}
