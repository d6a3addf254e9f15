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
"""

from __future__ import annotations

import base64
import decimal
import fractions
import json
import re
from collections.abc import Callable
from typing import Any

BIG_INT_DIGITS = 4000  # below Python's int/str conversion limit (4,300 digits)
_BIG_INT = 10**BIG_INT_DIGITS
_LONG_NUMBER = re.compile(rb"[0-9]{%d}" % (BIG_INT_DIGITS + 1))
MAX_ITER_ITEMS = 1 << 20  # a generator is listed up to this many items


class ValuesError(Exception):
    """Root of this module's errors."""


class Unencodable(ValuesError):
    """The value is not one of the plain values that may cross (the message names its type)."""


class DecodeError(ValuesError, ValueError):
    """The bytes are not an encoding of a plain value (or, for JSON, of a JSON value)."""


# -- encoding -------------------------------------------------------------------------------------


def encode(value: Any) -> bytes:
    """The encoding of `value`; raises Unencodable for anything that is not a plain value."""
    try:
        return json.dumps(_tagged(value), allow_nan=True, check_circular=False).encode()
    except RecursionError:
        raise Unencodable("the value is nested too deeply (or contains itself)") from None


def _tagged(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None or kind is float:
        return value
    if kind is int:
        return _int(value)
    if kind is list:
        return [_tagged(item) for item in value]
    encoder = _ENCODERS.get(kind)
    if encoder is not None:
        return encoder(value)
    return _tagged_other(value, kind)


def _int(value: int) -> Any:
    if -_BIG_INT < value < _BIG_INT:
        return value
    return {"#": "int", "v": format(value, "x")}


def _items(tag: str) -> Callable[[Any], Any]:
    return lambda value: {"#": tag, "v": [_tagged(item) for item in value]}


def _dict(value: dict[Any, Any]) -> Any:
    flat = []
    for key, item in dict.items(value):
        flat.append(_tagged(key))
        flat.append(_tagged(item))
    return {"#": "dict", "v": flat}


def _bytes(tag: str) -> Callable[[Any], Any]:
    return lambda value: {"#": tag, "v": base64.b64encode(value).decode()}


def _iterator(value: Any) -> Any:
    items: list[Any] = []
    for item in value:
        if len(items) == MAX_ITER_ITEMS:
            raise Unencodable(f"the iterator yields more than {MAX_ITER_ITEMS} items")
        items.append(_tagged(item))
    return {"#": "iter", "v": items}


_ENCODERS: dict[type, Callable[[Any], Any]] = {
    tuple: _items("tuple"),
    set: _items("set"),
    frozenset: _items("frozenset"),
    dict: _dict,
    bytes: _bytes("bytes"),
    bytearray: _bytes("bytearray"),
    complex: lambda value: {"#": "complex", "v": [value.real, value.imag]},
    range: lambda value: {"#": "range", "v": [value.start, value.stop, value.step]},
    fractions.Fraction: lambda value: {
        "#": "fraction",
        "v": [_int(value.numerator), _int(value.denominator)],
    },
    decimal.Decimal: lambda value: {"#": "decimal", "v": str(value)},
}
# Base types a subclass travels as, in the order they are tried (bool before int: bool is final).
_BASES: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (int, lambda value: _int(int.__int__(value))),
    (float, lambda value: float.__float__(value)),
    (str, lambda value: str.__str__(value)),
    (tuple, lambda value: _ENCODERS[tuple](tuple.__iter__(value))),
    (list, lambda value: [_tagged(item) for item in list.__iter__(value)]),
    (dict, _dict),
    (frozenset, lambda value: _ENCODERS[frozenset](frozenset.__iter__(value))),
    (set, lambda value: _ENCODERS[set](set.__iter__(value))),
    (bytes, lambda value: _ENCODERS[bytes](bytes(value))),
)
_SET_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.items()))
_VALUES_VIEW: type = type({}.values())


def _tagged_other(value: Any, kind: type) -> Any:
    """Subclasses, iterators, dict views and numpy values; Unencodable for the rest."""
    module = getattr(kind, "__module__", "")
    if module == "numpy":
        return _numpy(value, kind)
    if hasattr(kind, "__next__") or kind is _VALUES_VIEW:  # a generator, map, zip, ...
        return _iterator(iter(value))
    if kind in _SET_VIEWS:
        return _ENCODERS[set](value)
    for base, encoder in _BASES:
        if isinstance(value, base):
            return encoder(value)
    raise Unencodable(f"a value of type {kind.__qualname__} is not a plain value")


def _numpy(value: Any, kind: type) -> Any:
    if kind.__name__ == "ndarray":
        return {
            "#": "ndarray",
            "dtype": str(value.dtype),
            "shape": list(value.shape),
            "v": _tagged(value.tolist()),
        }
    if hasattr(value, "item") and hasattr(value, "dtype"):
        return _tagged(value.item())
    raise Unencodable(f"a value of type numpy.{kind.__qualname__} is not a plain value")


# -- decoding -------------------------------------------------------------------------------------


def decode(data: bytes | str, json_compatible: bool = False) -> Any:
    """The plain value `data` encodes; raises DecodeError for anything else.

    `json_compatible`: build a JSON value instead, as `json.dumps` would have written the original
    (tuples and iterators as lists, arrays as nested lists, dict keys as strings); a value JSON
    cannot hold (a set, bytes, a complex, an int too long to write as decimal) is a DecodeError.
    Dicts are then keyed by strings only, whose hashes are salted per process, so no crafted keys
    can make building them slow.
    """
    hook = _json_untag if json_compatible else _untag
    options: dict[str, Any] = {"object_pairs_hook": hook}
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if _LONG_NUMBER.search(raw):  # in a number, or maybe only in a string: each int is checked
        options["parse_int"] = _bounded_int
    try:
        return json.loads(data, **options)
    except DecodeError:
        raise
    except RecursionError:
        raise DecodeError("nested too deeply") from None
    except (ValueError, TypeError, OverflowError, MemoryError, UnicodeDecodeError) as error:
        raise DecodeError(f"{type(error).__name__}: {error}") from None


def _bounded_int(text: str) -> int:
    """An int literal, refused past BIG_INT_DIGITS: decimal text to int is quadratic, and the
    process's own digit limit may be lifted (a library can), so the cap is ours. Longer ints
    travel as hex."""
    if len(text.lstrip("-")) > BIG_INT_DIGITS:
        raise DecodeError(f"a number of more than {BIG_INT_DIGITS} digits")
    return int(text)


def _untag(pairs: list[tuple[str, Any]]) -> Any:
    tag, items = _tag_of(pairs)
    builder = _DECODERS.get(tag)
    if builder is None:
        raise DecodeError(f"unknown tag {tag!r}")
    if tag == "ndarray":
        return _array(pairs, items, typed=True)
    return builder(items)


def _json_untag(pairs: list[tuple[str, Any]]) -> Any:
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


def _iter_value(items: Any) -> Any:
    return iter(tuple(_list(items)))


def _array(pairs: list[tuple[str, Any]], items: Any, typed: bool) -> Any:
    """A numpy array: rebuilt as one (`typed`), or as its nested list; its shape checked first."""
    fields = dict(pairs)
    shape, dtype = fields.get("shape"), fields.get("dtype")
    if set(fields) != {"#", "dtype", "shape", "v"} or type(shape) is not list or type(dtype) is not str:
        raise DecodeError("an ndarray needs dtype, shape and v")
    if not _has_shape(items, shape) or len(dtype) > 64:
        raise DecodeError("an ndarray whose items do not have its shape")
    if not typed:
        return items
    import numpy  # only a value that was an array brings numpy in

    try:
        return numpy.array(items, dtype=numpy.dtype(dtype)).reshape(shape)
    except (TypeError, ValueError, OverflowError) as error:
        raise DecodeError(f"an ndarray that numpy refuses: {error}") from None


def _has_shape(items: Any, shape: list[Any]) -> bool:
    if not shape:
        return type(items) is not list
    size = shape[0]
    if type(size) is not int or type(items) is not list or len(items) != size:
        return False
    return all(_has_shape(item, shape[1:]) for item in items)


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
    "iter": _iter_value,
    "ndarray": lambda items: items,
}
