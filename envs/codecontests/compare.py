"""Judging a program's stdout against a test's expected output.

Exact rule (the default checker), applied to both outputs before they are compared for equality:

1. bytes are decoded as UTF-8, invalid sequences replaced by U+FFFD;
2. line endings are unified: "\\r\\n" and a lone "\\r" become "\\n";
3. trailing whitespace (spaces, tabs, form feeds, vertical tabs) is removed from every line;
4. empty lines at the end of the output are removed (so a missing or extra final newline never matters).

Everything else is significant: leading whitespace on a line, whitespace between tokens, blank lines
before or between non-blank lines, letter case.

With a float tolerance (`float_tolerance` on the problem), both outputs are instead split into
whitespace-separated tokens; the token counts must be equal, and each pair of tokens must either be
equal strings or both parse as finite floats with |got - expected| <= tol * max(1, |expected|)
(absolute error for small values, relative for large ones, as Codeforces checkers do).
"""

from __future__ import annotations

import math

_TRAILING = " \t\f\v"


def normalize_output(text: str | bytes) -> str:
    """`text` under the default rule above: unified newlines, no trailing blanks, no final empty lines."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = [line.rstrip(_TRAILING) for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def outputs_match(got: str | bytes, expected: str, float_tolerance: float | None = None) -> bool:
    """True when `got` is an accepted answer for `expected` (see the module docstring)."""
    if float_tolerance is None:
        return normalize_output(got) == normalize_output(expected)
    if isinstance(got, bytes):
        got = got.decode("utf-8", "replace")
    got_tokens, expected_tokens = got.split(), expected.split()
    if len(got_tokens) != len(expected_tokens):
        return False
    return all(_tokens_match(g, e, float_tolerance) for g, e in zip(got_tokens, expected_tokens, strict=True))


def _tokens_match(got: str, expected: str, tolerance: float) -> bool:
    """Equal strings, or two finite floats within `tolerance` (absolute below 1, relative above)."""
    if got == expected:
        return True
    try:
        got_value, expected_value = float(got), float(expected)
    except ValueError:
        return False
    if not (math.isfinite(got_value) and math.isfinite(expected_value)):
        return False
    return abs(got_value - expected_value) <= tolerance * max(1.0, abs(expected_value))
